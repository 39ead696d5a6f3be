import PostgresNIO

/// What a lease's work does to the database, and so whether its caller must wait for the commit.
///
/// A statement outside a transaction block runs in an implicit transaction that PostgreSQL commits only when it
/// handles the `Sync` after the statement — after the statement's `CommandComplete`, which is where PostgresNIO 1.33
/// completes the query (`ExtendedQueryStateMachine.commandCompletedReceived`). A commit that fails there (a WAL write
/// or flush error, a crash, a deferred constraint) was never reported: the ledger answered 201 for events it had not
/// stored, and the client, told "stored", never retried. The pool therefore confirms every lease's commit before its
/// work is answered (`confirmCommitted`), unless the work says it only reads: the default is the safe one, so that no
/// new statement can forget it.
enum SessionUse: Sendable {
    /// The work may write: its answer waits for PostgreSQL's word on the commit (`CommitWatch`).
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
    /// PostgreSQL answers each `Sync` with `ReadyForQuery` once the implicit transaction before it has committed, and
    /// with an `ErrorResponse` first when the commit failed. PostgresNIO reads both after it has completed the
    /// statement, so each session of the pool carries a `CommitWatch` that sees PostgreSQL's messages as they
    /// arrive: this waits until every request sent has its `ReadyForQuery` — usually not at all, as it comes in the
    /// same packet as the statement's `CommandComplete` — the fix rust-postgres made, without a round trip of its own.
    /// (An empty statement after each write did the same at a round trip per write: a third fewer appends at
    /// 16 clients on two cores.) Inside a transaction block (`withTransaction`) the explicit `COMMIT` reports its own
    /// outcome, and this is not needed.
    func confirmCommitted() async throws {
        // A lease whose deadline passed is being closed: its caller was answered 503.
        try Task.checkCancellation()
        guard let watch = CommitWatches.shared.watch(of: self) else {
            throw CommitUnconfirmed(underlying: CommitWatch.NotWatched())
        }
        try await watch.committed()
    }
}
