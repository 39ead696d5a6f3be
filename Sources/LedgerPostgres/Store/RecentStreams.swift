import Foundation
import LedgerCore
import Synchronization

/// What this node knows of the streams it wrote last, so that its next append to one of them — and the first append
/// of a new stream — can skip the read: one statement, one round trip, instead of two, and that statement shared with
/// the other appends decided from memory meanwhile (`AppendGroup`).
///
/// Nothing remembered is trusted. An append decided from memory is written with the guards every append's write has
/// — the stream's version (another node may have written since), the unique event ids, the transaction's binding —
/// and two more that only the read used to give (`AppendStatements.groupWriteQuery`): the token epoch the request's
/// cached token was read under, and a recorded time neither after the database's clock nor more than
/// `clockToleranceSeconds` before it. A write any guard stops writes nothing, and the append reads and decides as
/// before. A decision from memory that refuses or conflicts is never answered either: the append reads and decides
/// again, so what a client is told rests on what the database holds.
///
/// The recorded time is the database's clock as the node estimates it (`databaseClock()`), never before the
/// stream's last event: the node's own clock plus the offset one of its reads saw — the database's clock at the read
/// minus the node's halfway between sending it and its answer, from the read with the shortest round trip since the
/// estimate was last reset (as NTP picks its samples), so the estimate is off by at most half that round trip. Times
/// within a stream never go backwards; a node whose clock jumps, or drifts past the tolerance either way, has its
/// write refused once, and the estimate starts again from the read that follows.
final class RecentStreams: Sendable {
    /// A stream as this node's last write to it left it.
    struct Stream: Sendable {
        let version: Int
        let lastHash: [UInt8]
        /// The time its last events were recorded at: the next one is never earlier.
        let recordedAt: Date
        /// What the write projected (`StreamProjection.Written`: an order's row), which the next decision reads.
        let written: any Sendable
    }

    /// How far before the database's clock a time decided from memory may be (the write checks).
    static let clockToleranceSeconds = 1

    /// Two generations of remembered streams, the newest first: a lookup finds either, a full newest generation
    /// becomes the older one. The streams a node wrote recently stay; a bound, not a policy.
    private struct Generations {
        var newest: [StreamName: Stream] = [:]
        var older: [StreamName: Stream] = [:]
    }

    static let generationSize = 4_096
    private let streams = Mutex(Generations())

    /// A reading of the database's clock: its offset from the node's, and the round trip it was read in.
    private struct ClockReading {
        let offset: TimeInterval
        let roundTrip: TimeInterval
    }

    /// The reading with the shortest round trip since the last reset; nil before any.
    private let clockReading = Mutex<ClockReading?>(nil)
    /// The node's clock (injected by tests).
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date = Date.init) {
        self.now = now
    }

    /// An append decided from memory was not written (a guard stopped it, or another writer moved the stream):
    /// the stream and the clock estimate are forgotten, and the append's read sets them again.
    func missed(_ stream: StreamName) {
        remember(stream, nil)
        clockReading.withLock { $0 = nil }
    }

    /// Remembers the stream a write left; a write without a projection forgets it (its state is not known here).
    func remember(_ name: StreamName, _ stream: Stream?) {
        streams.withLock { generations in
            guard let stream else {
                generations.newest[name] = nil
                generations.older[name] = nil
                return
            }
            if generations.newest.count >= Self.generationSize {
                generations.older = generations.newest
                generations.newest.removeAll(keepingCapacity: true)
            }
            generations.newest[name] = stream
        }
    }

    /// The node's clock: when a statement that reads the database's clock is sent (`observe`).
    func nodeClock() -> Date { now() }

    /// Notes the database's clock a statement sent at `sentAt` (`nodeClock()`) has just answered with.
    func observe(databaseClock: Date, sentAt: Date) {
        let roundTrip = max(0, now().timeIntervalSince(sentAt))
        let midway = sentAt.addingTimeInterval(roundTrip / 2)
        let reading = ClockReading(offset: databaseClock.timeIntervalSince(midway), roundTrip: roundTrip)
        clockReading.withLock { best in
            if best.map({ reading.roundTrip <= $0.roundTrip }) ?? true { best = reading }
        }
    }

    /// The stream as this node's last write to it left it; nil when not remembered.
    func stream(_ name: StreamName) -> Stream? {
        streams.withLock { $0.newest[name] ?? $0.older[name] }
    }

    /// The database's clock as estimated here, to the microsecond it is stored with (rounded down); nil before the
    /// first reading.
    func databaseClock() -> Date? {
        guard let offset = clockReading.withLock({ $0?.offset }) else { return nil }
        let seconds = now().addingTimeInterval(offset).timeIntervalSince(Timestamp.epoch2000)
        return Timestamp.epoch2000.addingTimeInterval((seconds * 1_000_000).rounded(.down) / 1_000_000)
    }
}
