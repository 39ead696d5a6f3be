import ArgumentParser
import Foundation
import LedgerPostgres

/// `--database-url`, shared by every subcommand. Without it (and without `DATABASE_URL`) the embedded cluster
/// in `LEDGER_DATA_DIR` (default `./.ledger`) is used, started if needed; only `serve` and `migrate` create one.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: """
        postgres://user:password@host:port/database, or several servers of a high-availability formation as libpq \
        takes them, postgres://user@h1:5432,h2:5432/database?target_session_attrs=read-write (default: $DATABASE_URL, \
        else the embedded database in $LEDGER_DATA_DIR, default ./.ledger, which only serve and migrate create).
        """)
    var url: String?

    /// Runs `body` with the ledger opened on a migrated database (`Database.withLedger`); stops the embedded cluster
    /// afterwards if this command started it.
    func withLedger<T: Sendable>(_ body: @Sendable @escaping (LedgerDatabase) async throws -> T) async throws -> T {
        try await withDatabaseAndLedger { _, ledger in try await body(ledger) }
    }

    /// `withLedger`, telling `body` which database it is (`Database.name`, for a command that finds nothing).
    func withDatabaseAndLedger<T: Sendable>(
        _ body: @Sendable @escaping (Database, LedgerDatabase) async throws -> T
    ) async throws -> T {
        CommandLogging.bootstrap()
        let (database, startedEmbedded) = try Database.resolve(url: url, creating: false)
        defer {
            if startedEmbedded { try? database.embedded?.stop() }
        }
        return try await database.withLedger { ledger in try await body(database, ledger) }
    }
}

/// PostgreSQL's own limits on `serve`'s sessions (see `ServerLimits` for why, and why the defaults stay above
/// `--database-deadline`). Only `serve` takes these: the operator's commands run without limits.
struct ServerLimitOptions: ParsableArguments {
    @Option(name: .customLong("statement-timeout"), help: "Seconds PostgreSQL lets one of the service's statements run (0: no limit).")
    var statementTimeout = Int(ServerLimits.service.statement.components.seconds)
    @Option(name: .customLong("lock-timeout"), help: "Seconds one of the service's statements may wait for a lock (0: no limit).")
    var lockTimeout = Int(ServerLimits.service.lock.components.seconds)
    @Option(name: .customLong("idle-in-transaction-timeout"), help: "Seconds a service session may sit idle inside a transaction before PostgreSQL ends it (0: no limit).")
    var idleInTransactionTimeout = Int(ServerLimits.service.idleInTransaction.components.seconds)

    /// PostgreSQL takes at most 2^31 − 1 ms for each; a day is far beyond any sensible limit and well within that.
    static let maximumSeconds = 86_400

    func validate() throws {
        for (option, value) in [("--statement-timeout", statementTimeout), ("--lock-timeout", lockTimeout),
                                ("--idle-in-transaction-timeout", idleInTransactionTimeout)]
        where !(0...Self.maximumSeconds).contains(value) {
            throw ValidationError("\(option) must be from 0 (no limit) to \(Self.maximumSeconds) seconds")
        }
    }

    var limits: ServerLimits {
        ServerLimits(statement: .seconds(statementTimeout), lock: .seconds(lockTimeout),
                     idleInTransaction: .seconds(idleInTransactionTimeout))
    }
}
