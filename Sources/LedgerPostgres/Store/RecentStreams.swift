import Foundation
import LedgerCore
import Synchronization

/// What this node knows of the streams it wrote last, so that its next append to one of them — and the first append
/// of a new order — can skip the read: one statement, one round trip, instead of two.
///
/// Nothing remembered is trusted. An append decided from memory is written with the guards every append's write has
/// — the stream's version (another node may have written since), the unique event ids, the transaction's binding —
/// and two more that only the read used to give (`AppendStatements.writeQuery`): the token epoch the request's
/// cached token was read under, and a recorded time neither after the database's clock nor more than
/// `clockToleranceSeconds` before it. A write any guard stops writes nothing, and the append reads and decides as
/// before. A decision from memory that refuses or conflicts is never answered either: the append reads and decides
/// again, so what a client is told rests on what the database holds.
///
/// The recorded time is the database's clock as the node estimates it (`databaseClock()`), never before the
/// stream's last event: the node's own clock plus the offset its reads saw, the largest since the estimate was last
/// reset. A read's offset is the database's clock at the read minus the node's once the answer is in, so it is never
/// ahead of the true one, and the largest is the one with the shortest delay. Times within an order therefore never
/// go backwards; a node whose clock jumps forward has its write refused once, and the estimate starts again from the
/// read that follows.
final class RecentStreams: Sendable {
    /// A stream as this node's last write to it left it.
    struct Stream: Sendable {
        let version: Int
        let lastHash: [UInt8]
        /// The time its last events were recorded at: the next one is never earlier.
        let recordedAt: Date
        /// The order the write projected, i.e. its `orders` row.
        let order: Order
    }

    /// How far before the database's clock a time decided from memory may be (the write checks).
    static let clockToleranceSeconds = 1

    /// Two generations of remembered streams, the newest first: a lookup finds either, a full newest generation
    /// becomes the older one. The streams a node wrote recently stay; a bound, not a policy.
    private struct Generations {
        var newest: [String: Stream] = [:]
        var older: [String: Stream] = [:]
    }

    private let streams = Mutex(Generations())
    /// The database's clock minus the node's, the largest a read saw since the last reset; nil before any.
    private let clockOffset = Mutex<TimeInterval?>(nil)
    /// The node's clock (injected by tests).
    private let now: @Sendable () -> Date
    static let generationSize = 4_096

    init(now: @escaping @Sendable () -> Date = Date.init) {
        self.now = now
    }

    /// An append decided from memory was not written (a guard stopped it, or another writer moved the stream):
    /// the stream and the clock estimate are forgotten, and the append's read sets them again.
    func missed(_ orderId: String) {
        remember(orderId, nil)
        clockOffset.withLock { $0 = nil }
    }

    /// Remembers the stream a write left; a write without a projection forgets it (its order is not known here).
    func remember(_ orderId: String, _ stream: Stream?) {
        streams.withLock { generations in
            guard let stream else {
                generations.newest[orderId] = nil
                generations.older[orderId] = nil
                return
            }
            if generations.newest.count >= Self.generationSize {
                generations.older = generations.newest
                generations.newest.removeAll(keepingCapacity: true)
            }
            generations.newest[orderId] = stream
        }
    }

    /// Notes the database's clock a statement has just read.
    func observe(databaseClock: Date) {
        let offset = databaseClock.timeIntervalSince(now())
        clockOffset.withLock { $0 = max($0 ?? offset, offset) }
    }

    /// The stream as this node's last write to it left it; nil when not remembered.
    func stream(of orderId: String) -> Stream? {
        streams.withLock { $0.newest[orderId] ?? $0.older[orderId] }
    }

    /// The database's clock as estimated here, to the microsecond it is stored with (rounded down: never later
    /// than the estimate); nil before the first reading.
    func databaseClock() -> Date? {
        guard let offset = clockOffset.withLock({ $0 }) else { return nil }
        let seconds = now().addingTimeInterval(offset).timeIntervalSince(Timestamp.epoch2000)
        return Timestamp.epoch2000.addingTimeInterval((seconds * 1_000_000).rounded(.down) / 1_000_000)
    }
}
