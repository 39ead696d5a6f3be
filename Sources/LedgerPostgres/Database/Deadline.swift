import Logging
import PostgresNIO
import Synchronization

/// How long the service's database work may take before the caller is answered 503 and retries. An outage must
/// never hold a request: while PostgreSQL is down the pool keeps requests waiting for a connection (up to a minute),
/// and a query on a connection PostgreSQL dropped mid-transaction has been seen to wait forever.
/// A reconciliation has none: it streams a whole provider file through one connection, for as long as that takes.
public enum Deadline {
    /// For a request's work: an append, a read, a token check. `serve --database-deadline` sets it for everything
    /// the service runs; a task-local, so a test can give its own work a longer or shorter one.
    @TaskLocal public static var request = Duration.seconds(5)
}

/// The database did not answer within the deadline. Nothing was half-written: PostgreSQL rolls back the transaction
/// of a closed connection, and a commit whose answer was lost is found by the client's retry (same event ids: a replay).
public struct DatabaseTimeout: Error, CustomStringConvertible {
    public let limit: Duration
    public var description: String { "the database did not answer within \(limit)" }
}

extension PostgresClient {
    /// Leases a connection and runs `body` on it, giving up after `limit` with `DatabaseTimeout`: a wait for a
    /// connection is cancelled, and a connection still in use is closed. `body` must finish with its rows inside.
    ///
    /// The work runs in a task of its own, and the caller is answered at the deadline without waiting for it:
    /// PostgresNIO's queries ignore cancellation, and when PostgreSQL shuts down in the middle of a transaction a
    /// query on that connection has been seen never to return, even after the connection is closed
    /// (scripts/faults/db-restart). Such a task stays suspended; that is the price of answering.
    public func withConnection<T: Sendable>(
        within limit: Duration, _ body: @Sendable @escaping (PostgresConnection) async throws -> T
    ) async throws -> T {
        let inUse = LeasedConnection()
        let work = Task {
            try await self.withConnection { connection in
                inUse.connection.withLock { $0 = connection }
                // Back in the pool it is someone else's: the deadline must not close it then.
                defer { inUse.connection.withLock { $0 = nil } }
                return try await body(connection)
            }
        }
        return try await withCheckedThrowingContinuation { continuation in
            let answer = FirstAnswer(continuation)
            let deadline = Task {
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                work.cancel()
                inUse.connection.withLock { $0 }?.close().whenComplete { _ in }
                answer.give(.failure(DatabaseTimeout(limit: limit)))
            }
            Task {
                let result = await work.result
                deadline.cancel()
                answer.give(result)
            }
        }
    }
}

/// The connection a deadline may have to close.
private final class LeasedConnection: Sendable {
    let connection = Mutex<PostgresConnection?>(nil)
}

/// Resumes the caller with whichever answer comes first: the work's result or the deadline's timeout.
private final class FirstAnswer<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>

    init(_ continuation: CheckedContinuation<T, any Error>) {
        self.continuation = Mutex(continuation)
    }

    func give(_ result: Result<T, any Error>) {
        continuation.withLock { continuation in
            continuation?.resume(with: result)
            continuation = nil
        }
    }
}

extension PostgresClient {
    /// Runs one query and reads its rows within `Deadline.request`.
    public func query<T: Sendable>(
        _ query: PostgresQuery, logger: Logger, reading read: @Sendable @escaping (PostgresRowSequence) async throws -> T
    ) async throws -> T {
        try await withConnection(within: Deadline.request) { connection in
            try await read(try await connection.query(query, logger: logger))
        }
    }
}
