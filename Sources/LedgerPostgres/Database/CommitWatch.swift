import NIOCore
import PostgresNIO
import Synchronization

/// What PostgreSQL said of a session's commits: how many requests that end a transaction it has been sent (`Sync`,
/// a simple `Query`) and how many it has answered `ReadyForQuery`, which it sends only after the commit. Fed by the
/// session's `CommitWatchHandler`; read by `PostgresConnection.confirmCommitted`.
final class CommitWatch: Sendable {
    private struct State {
        var sent = 0
        var answered = 0
        /// Set for good once a commit failed or the session closed: the session is done for.
        var failure: (any Error)?
        var waiting: [(until: Int, continuation: CheckedContinuation<Void, any Error>)] = []
    }
    private let state = Mutex(State())

    /// Returns once every request sent so far is answered `ReadyForQuery` without a failed commit. A session that
    /// closes after its last answer lost nothing.
    func committed() async throws {
        enum Now { case committed, failed(any Error), wait(until: Int) }
        let now = state.withLock { state -> Now in
            if state.answered >= state.sent { return .committed }
            if let failure = state.failure { return .failed(failure) }
            return .wait(until: state.sent)
        }
        switch now {
        case .committed: return
        case .failed(let failure): throw CommitUnconfirmed(underlying: failure)
        case .wait(let until):
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let failure = state.withLock { state -> (any Error)?? in
                    if state.answered >= until { return .some(nil) }
                    if let failure = state.failure { return .some(failure) }
                    state.waiting.append((until, continuation))
                    return nil
                }
                switch failure {
                case .none: break
                case .some(.none): continuation.resume()
                case .some(.some(let failure)): continuation.resume(throwing: CommitUnconfirmed(underlying: failure))
                }
            }
        }
    }

    fileprivate func sent(_ requests: Int) {
        state.withLock { $0.sent += requests }
    }

    /// `count` more `ReadyForQuery`: the transactions before them committed.
    fileprivate func answered(_ count: Int) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.answered += count
            guard state.waiting.contains(where: { $0.until <= state.answered }) else { return [] }
            let answered = state.answered
            defer { state.waiting.removeAll { $0.until <= answered } }
            return state.waiting.filter { $0.until <= answered }.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    fileprivate func fail(_ failure: any Error) {
        let waiting = state.withLock { state in
            if state.failure == nil { state.failure = failure }
            defer { state.waiting = [] }
            return state.waiting.map(\.continuation)
        }
        for continuation in waiting { continuation.resume(throwing: CommitUnconfirmed(underlying: failure)) }
    }

    /// The commit after a statement failed: PostgreSQL answered its `Sync` with an error after `CommandComplete`.
    struct FailedAtCommit: Error, CustomStringConvertible {
        var description: String { "PostgreSQL reported an error after the statement completed: its commit failed" }
    }

    /// The session closed before PostgreSQL answered: its commit failed, or the server went away.
    struct ClosedBeforeAnswer: Error, CustomStringConvertible {
        var description: String { "the session closed before PostgreSQL confirmed the commit" }
    }

    /// A session the pool did not open carries no watch: its commits cannot be confirmed.
    struct NotWatched: Error, CustomStringConvertible {
        var description: String { "the session has no commit watch" }
    }
}

/// Sits at the head of a session's pipeline, before PostgresNIO's handlers, and passes every byte on unchanged: it
/// counts the requests written (`Sync`, `Query`) and the `ReadyForQuery` answers read, and marks a commit failed when
/// an `ErrorResponse` follows a `CommandComplete` before the `ReadyForQuery` (PostgresNIO then closes the session).
/// Added once the session has started, so both directions begin at a message's first byte; the session is never TLS
/// (`SessionPool.openSession`), so these are PostgreSQL's messages in the clear.
final class CommitWatchHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let watch: CommitWatch
    private var read = MessageFrames()
    private var written = MessageFrames()
    /// A statement completed since the last `ReadyForQuery`.
    private var completed = false

    init(_ watch: CommitWatch) { self.watch = watch }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var readies = 0
        var commitFailed = false
        read.scan(unwrapInboundIn(data)) { type in
            switch type {
            case UInt8(ascii: "C"), UInt8(ascii: "I"): completed = true  // CommandComplete, EmptyQueryResponse
            case UInt8(ascii: "E"): if completed { commitFailed = true }
            // CopyInResponse: PostgreSQL is in COPY FROM STDIN, where it ignores a Sync, and PostgresNIO sent one with
            // the COPY's Execute; only the Sync after CopyDone (or CopyFail) is answered. The ignored one counts as
            // answered, so that each COPY is one request, as each statement is.
            case UInt8(ascii: "G"): readies += 1
            case UInt8(ascii: "Z"):
                if !commitFailed { readies += 1 }
                completed = false
            default: break
            }
        }
        // PostgresNIO reads the messages first; the session is closed before anyone learns of the failed commit, so
        // that the pool, given it back, does not lend it again.
        context.fireChannelRead(data)
        if readies > 0 { watch.answered(readies) }
        if commitFailed {
            context.close(promise: nil)
            watch.fail(CommitWatch.FailedAtCommit())
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var requests = 0
        written.scan(unwrapOutboundIn(data)) { type in
            if type == UInt8(ascii: "S") || type == UInt8(ascii: "Q") { requests += 1 }  // Sync, Query
        }
        if requests > 0 { watch.sent(requests) }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        watch.fail(CommitWatch.ClosedBeforeAnswer())
        context.fireChannelInactive()
    }
}

/// Where each of PostgreSQL's protocol messages starts in a stream of bytes cut anywhere: every message after the
/// startup is a type byte, then a 32-bit big-endian length that counts itself and the body.
struct MessageFrames {
    /// How many bytes of the current message's five-byte header have been seen.
    private var headerSeen = 0
    private var type: UInt8 = 0
    private var length: UInt32 = 0
    private var bodyLeft = 0

    /// Calls `found` with the type of each message whose header ends in `buffer`.
    mutating func scan(_ buffer: ByteBuffer, _ found: (UInt8) -> Void) {
        buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count {
                if bodyLeft > 0 {
                    let skipped = min(bodyLeft, bytes.count - index)
                    index += skipped
                    bodyLeft -= skipped
                    continue
                }
                let byte = bytes[index]
                index += 1
                if headerSeen == 0 { type = byte; length = 0 } else { length = length << 8 | UInt32(byte) }
                headerSeen += 1
                guard headerSeen == 5 else { continue }
                headerSeen = 0
                bodyLeft = max(0, Int(length) - 4)
                found(type)
            }
        }
    }
}

/// The watch of each session the pool opened, until it closes.
final class CommitWatches: Sendable {
    static let shared = CommitWatches()
    private let watches = Mutex<[ObjectIdentifier: CommitWatch]>([:])

    /// Puts a watch on `connection`, whose `channel` the pool opened and PostgresNIO has started; on the channel's
    /// event loop.
    func watch(_ connection: PostgresConnection, channel: any Channel) -> EventLoopFuture<PostgresConnection> {
        let watch = CommitWatch()
        let session = ObjectIdentifier(connection)
        watches.withLock { $0[session] = watch }
        connection.closeFuture.whenComplete { _ in
            // Holding the connection until it closes keeps its identifier from being reused meanwhile.
            withExtendedLifetime(connection) {}
            _ = self.watches.withLock { $0.removeValue(forKey: session) }
        }
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(CommitWatchHandler(watch), position: .first)
            return connection
        }
    }

    func watch(of connection: PostgresConnection) -> CommitWatch? {
        watches.withLock { $0[ObjectIdentifier(connection)] }
    }
}
