import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// How long the service's database work may take before the caller is answered 503 and retries. An outage must
/// never hold a request: a session can take up to its connect timeout to open when PostgreSQL does not answer, and a
/// query on a connection PostgreSQL dropped mid-transaction has been seen to wait forever.
public enum Deadline {
    /// For a request's work: an append, a read, a token check, a revenue report, the anomalies (a reconciliation has
    /// none: it streams a whole provider file through one connection). `serve --database-deadline` sets it (5 s) for
    /// everything the service runs; nil, the default, is no limit: the operator's commands wait as long as it takes.
    /// A task-local, so a test can give its own work one.
    @TaskLocal public static var request: Duration?

    /// When the request being served must be answered (`forRequest`): its database calls share one deadline. An
    /// append or a read makes several (the token, the read, the write), and each used to get the whole duration: a
    /// request during an outage answered 503 after 10 s where 5 s were documented.
    @TaskLocal static var requestEnds: RequestEnd?

    /// What the next database call may take: the time the request being served has left, or `request` outside one.
    public static var remaining: Duration? {
        guard let requestEnds else { return request }
        return max(.zero, requestEnds.instant - .now)
    }

    /// Runs `body` as one request: every database call in it shares the deadline `request` sets from now.
    public static func forRequest<T>(_ body: () async throws -> T) async rethrows -> T {
        guard let request else { return try await body() }
        return try await $requestEnds.withValue(RequestEnd(.now + request)) { try await body() }
    }

    /// The request's body has arrived: its database work has the whole deadline from now. The time the client took to
    /// send the body is the body's own limit (`serve --body-timeout`, a 408), not the database's: a slow body was
    /// answered 503 "the database cannot be reached".
    public static func restartForRequest() {
        guard let request, let requestEnds else { return }
        requestEnds.instant = .now + request
    }

    /// A request's deadline, moved once its body has arrived (`restartForRequest`).
    final class RequestEnd: Sendable {
        private let end: Mutex<ContinuousClock.Instant>
        init(_ instant: ContinuousClock.Instant) { end = Mutex(instant) }
        var instant: ContinuousClock.Instant {
            get { end.withLock { $0 } }
            set { end.withLock { $0 = newValue } }
        }
    }
}

/// The database did not answer within the deadline. Nothing was half-written: PostgreSQL rolls back the transaction
/// of a closed connection, and a commit whose answer was lost is found by the client's retry (same event ids: a replay).
public struct DatabaseTimeout: Error, CustomStringConvertible {
    public let limit: Duration
    public var description: String { "the database did not answer within \(limit)" }
}

extension SessionPool {
    /// Leases a connection and runs `body` on it, giving up after `limit` (when there is one) with `DatabaseTimeout`:
    /// a wait for a connection is cancelled, and a connection still in use is closed and forgotten by the pool (its
    /// slot is free at once). `body` must finish with its rows inside.
    ///
    /// The work runs in a task of its own, and the caller is answered at the deadline without waiting for it:
    /// PostgresNIO's queries ignore cancellation, and when PostgreSQL shuts down in the middle of a transaction a
    /// query on that connection has been seen never to return, even after the connection is closed
    /// (scripts/faults/db-restart). Such a task stays suspended; that is the price of answering.
    func withConnection<T: Sendable>(
        within limit: Duration?, _ use: SessionUse = .writes, _ body: @Sendable @escaping (PostgresConnection) async throws -> T
    ) async throws -> T {
        guard let limit else { return try await withConnection(use) { try await body($0) } }
        let inUse = LeasedConnection()
        return try await withCheckedThrowingContinuation { continuation in
            let answer = FirstAnswer(continuation)
            // On the caller's loop when it has one: the session pool is that loop's (`EventLoopPools`).
            let work = Task(executorPreference: EventLoopExecutor.current) {
                do {
                    let connection = try await self.lease(use)
                    defer { self.release(connection) }
                    inUse.connection.withLock { $0 = connection }
                    // Back in the pool it is someone else's: the deadline must not close it then. Until then, its
                    // commit's confirmation included, a deadline closes it.
                    defer { inUse.connection.withLock { $0 = nil } }
                    answer.give(.success(try await self.run(use, on: connection, body)))
                } catch {
                    answer.give(.failure(error))
                }
            }
            // A timer on an event loop, not a sleeping task: one per request, and cheap to cancel when the work answers.
            answer.setDeadline(NIOSingletons.posixEventLoopGroup.any().scheduleTask(in: TimeAmount(limit)) {
                // The answer first: closing the connection fails its query at once, and that error is not the answer.
                answer.give(.failure(DatabaseTimeout(limit: limit)))
                work.cancel()
                if let connection = inUse.connection.withLock({ $0 }) {
                    SessionPool.close(connection)
                    self.forget(connection)
                }
            })
        }
    }
}

/// The connection a deadline may have to close.
private final class LeasedConnection: Sendable {
    let connection = Mutex<PostgresConnection?>(nil)
}

/// Resumes the caller with whichever answer comes first, the work's result or the deadline's timeout, and then
/// stops the deadline's timer.
private final class FirstAnswer<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var deadline: Scheduled<Void>?
    }
    private let state: Mutex<State>

    init(_ continuation: CheckedContinuation<T, any Error>) {
        state = Mutex(State(continuation: continuation))
    }

    func give(_ result: Result<T, any Error>) {
        state.withLock { state in
            state.continuation?.resume(with: result)
            state.continuation = nil
            state.deadline?.cancel()
        }
    }

    /// The timer, stopped at once when the work has already answered.
    func setDeadline(_ deadline: Scheduled<Void>) {
        state.withLock { state in
            if state.continuation == nil { deadline.cancel() } else { state.deadline = deadline }
        }
    }
}

extension SessionPool {
    /// Runs one query and reads its rows, within `Deadline.remaining` when there is a deadline.
    func query<T: Sendable>(
        _ query: PostgresQuery, _ use: SessionUse = .writes, logger: Logger,
        reading read: @Sendable @escaping (PostgresRowSequence) async throws -> T
    ) async throws -> T {
        try await withConnection(within: Deadline.remaining, use) { connection in
            try await read(try await connection.statement(query, logger: logger))
        }
    }

    /// Runs a statement that returns a row per row it changed (`RETURNING 1`), within `Deadline.remaining`; returns
    /// how many.
    func countRows(_ query: PostgresQuery, logger: Logger) async throws -> Int {
        try await withConnection(within: Deadline.remaining) { connection in
            var count = 0
            for try await _ in try await connection.statement(query, logger: logger) { count += 1 }
            return count
        }
    }
}
