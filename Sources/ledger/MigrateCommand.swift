import ArgumentParser
import LedgerPostgres

/// `ledger migrate`: applies the pending migrations of `schema/` (carried in the binary).
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "migrate", abstract: "Apply pending database migrations.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        CommandLogging.bootstrap()
        let (resolved, startedEmbedded) = try Database.resolve(url: database.url)
        defer {
            if startedEmbedded { try? resolved.embedded?.stop() }
        }
        let applied = try await resolved.withClient { client in try await Migrator(client: client).migrate() }
        print(applied.isEmpty ? "database is up to date" : "applied: " + applied.joined(separator: ", "))
    }
}
