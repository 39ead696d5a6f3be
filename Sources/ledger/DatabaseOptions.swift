import ArgumentParser
import Foundation
import LedgerPostgres
import PostgresNIO

/// `--database-url`, shared by every subcommand. Without it (and without `DATABASE_URL`) the embedded cluster
/// in `LEDGER_DATA_DIR` (default `./.ledger`) is used, started if needed.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: "postgres://user:password@host:port/database (default: $DATABASE_URL, else the embedded database).")
    var url: String?

    /// Runs `body` with a migrated database; stops the embedded cluster afterwards if this command started it.
    func withMigratedClient<T: Sendable>(_ body: @Sendable @escaping (PostgresClient) async throws -> T) async throws -> T {
        CommandLogging.bootstrap()
        let (database, startedEmbedded) = try Database.resolve(url: url)
        defer {
            if startedEmbedded { try? database.embedded?.stop() }
        }
        return try await database.withClient { client in
            try await Migrator(client: client).migrate()
            return try await body(client)
        }
    }
}
