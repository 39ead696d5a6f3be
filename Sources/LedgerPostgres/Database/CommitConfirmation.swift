import Logging
import PostgresNIO
import Synchronization

/// What a lease's work does to the database, and so whether its caller must wait for the commit.
///
/// A statement outside a transaction block runs in an implicit transaction that PostgreSQL commits only when it
/// handles the `Sync` after the statement — after the statement's `CommandComplete`, which is where PostgresNIO 1.33
/// completes the query (`ExtendedQueryStateMachine.commandCompletedReceived`). A commit that fails there (a WAL write
/// or flush error, a crash, a deferred constraint) was never reported: the ledger answered 201 for events it had not
/// stored, and the client, told "stored", never retried. The pool therefore confirms every lease's commit before its
/// work is answered (`confirmCommitted`), unless the work says it only reads: the default is the safe one, so that no
/// new statement can forget it.
public enum SessionUse: Sendable {
    /// The work may write: its answer waits for PostgreSQL to confirm the commit (one more, empty, round trip).
    case writes
    /// The work only reads (a history page, an order, the feed): a failed commit loses nothing, so nothing waits.
    case reads
}

/// PostgreSQL did not confirm the commit of work it had run: the work may or may not be stored. Safe to retry with
/// the same ids (an append retried after a commit that did happen is a replay), so the API answers 503.
public struct CommitUnconfirmed: Error, CustomStringConvertible {
    public let underlying: any Error
    public var description: String { "the database did not confirm the commit (\(String(reflecting: underlying)))" }
}

extension PostgresConnection {
    /// `body`'s result on this session, once what it wrote is committed (`confirmCommitted`) unless it only reads.
    func run<T>(_ use: SessionUse, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        let result = try await body(self)
        if use == .writes { try await confirmCommitted() }
        return result
    }

    /// Returns once PostgreSQL has committed the statements sent before, or throws `CommitUnconfirmed`.
    ///
    /// PostgresNIO sends a statement only after the previous one's `ReadyForQuery`, which PostgreSQL sends after the
    /// implicit transaction's commit; an error there instead (`ErrorResponse` after `CommandComplete`) makes
    /// PostgresNIO close the connection and fail the statements queued behind it. So an empty statement that
    /// succeeds proves the commit before it — the fix rust-postgres made (waiting for `ReadyForQuery`), at the cost of
    /// one round trip that PostgreSQL answers without parsing anything. Inside a transaction block (`withTransaction`)
    /// the explicit `COMMIT` reports its own outcome, and this is not needed.
    func confirmCommitted() async throws {
        // A lease whose deadline passed is being closed: its caller was answered 503, and a statement sent on a
        // closing connection may never answer (below).
        try Task.checkCancellation()
        // A failed commit closes the connection, and PostgresNIO 1.33 drops a statement written to a channel that has
        // closed without failing it (`channel.write(…, promise: nil)`): the empty statement would never answer. So
        // the confirmation is also answered by the session's closing (`SessionClosings`), whichever comes first.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let confirmation = Confirmation(session: ObjectIdentifier(self), continuation)
            SessionClosings.shared.wait(confirmation)
            if isClosed { return confirmation.give(.failure(CommitUnconfirmed(underlying: ClosedAfterStatement()))) }
            Task {
                do {
                    for try await _ in try await query("", logger: Self.commitLogger) {}
                    confirmation.give(.success(()))
                } catch {
                    confirmation.give(.failure(CommitUnconfirmed(underlying: error)))
                }
            }
        }
    }

    /// The session closed after its statement: its commit failed, or the server went away.
    struct ClosedAfterStatement: Error, CustomStringConvertible {
        var description: String { "the session closed after the statement" }
    }

    private static let commitLogger = Logger(label: "ledger.db", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// A commit's confirmation, answered once: by the empty statement, or by its session closing.
private final class Confirmation: Sendable {
    let session: ObjectIdentifier
    private let continuation: Mutex<CheckedContinuation<Void, any Error>?>

    init(session: ObjectIdentifier, _ continuation: CheckedContinuation<Void, any Error>) {
        self.session = session
        self.continuation = Mutex(continuation)
    }

    func give(_ result: Result<Void, any Error>) {
        guard let continuation = continuation.withLock({ $0.take() }) else { return }
        SessionClosings.shared.done(self)
        continuation.resume(with: result)
    }
}

/// The confirmations waiting on each session, answered as soon as it closes. The pool follows every session it
/// opens (`follow`): one callback per session on its `closeFuture`, not one per write.
final class SessionClosings: Sendable {
    static let shared = SessionClosings()
    private let waiting = Mutex<[ObjectIdentifier: Confirmation]>([:])

    func follow(_ connection: PostgresConnection) {
        let session = ObjectIdentifier(connection)
        connection.closeFuture.whenComplete { _ in
            // Holding the connection until it closes keeps its identifier from being reused meanwhile.
            withExtendedLifetime(connection) {}
            self.waiting.withLock { $0.removeValue(forKey: session) }?
                .give(.failure(CommitUnconfirmed(underlying: PostgresConnection.ClosedAfterStatement())))
        }
    }

    fileprivate func wait(_ confirmation: Confirmation) {
        waiting.withLock { $0[confirmation.session] = confirmation }
    }

    fileprivate func done(_ confirmation: Confirmation) {
        waiting.withLock { waiting in
            if waiting[confirmation.session] === confirmation { waiting[confirmation.session] = nil }
        }
    }
}
