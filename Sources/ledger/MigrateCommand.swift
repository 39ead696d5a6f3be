import ArgumentParser
import Foundation
import LedgerPostgres
import Logging

/// `ledger migrate`: applies the pending migrations of `schema/` (carried in the binary), which also create the
/// least-privileged role `ledger_service` and its grants; with `LEDGER_SERVICE_PASSWORD` set, lets that role log in.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply pending database migrations and set up the service's role.",
        discussion: """
            Run it as the database's owner (a role that may create tables and roles). It creates the role \
            ledger_service, which may only read and append events and keep the projections. Set \
            LEDGER_SERVICE_PASSWORD to let ledger_service log in with that password (read from the environment, so \
            it never shows in a process list), then run `ledger serve` with \
            DATABASE_URL=postgres://ledger_service:PASSWORD@host:5432/database.
            """)

    @OptionGroup var database: DatabaseOptions
    @Flag(name: .customLong("allow-older-nodes"), help: """
        Apply new migrations even while serve nodes built for an older schema are connected (by default that is \
        refused); for migrations those nodes can run beside, such as a new index.
        """)
    var allowOlderNodes = false

    func run() async throws {
        CommandLogging.bootstrap()
        let (resolved, startedEmbedded) = try Database.resolve(url: database.url)
        defer {
            if startedEmbedded { try? resolved.embedded?.stop() }
        }
        let password = ProcessInfo.processInfo.environment["LEDGER_SERVICE_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        let applied = try await resolved.migrate(
            allowOlderNodes: allowOlderNodes, servicePassword: password, logger: Logger(label: "ledger.migrate"))
        try StandardOutput.line(applied.isEmpty ? "database is up to date" : "applied: " + applied.joined(separator: ", "))
        if password != nil { try StandardOutput.line("\(ServiceRole.name) may log in with LEDGER_SERVICE_PASSWORD") }
    }
}
