import ArgumentParser

/// `ledger`: the order ledger's service and its replay, audit and finance tools.
@main
struct LedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "An event-sourced order ledger for in-app and server-side payments.",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, TokensCommand.self,
            HistoryCommand.self, RebuildCommand.self, VerifyCommand.self, SealCommand.self, DigestCommand.self,
            ExportCommand.self, ReportCommand.self, ReconcileCommand.self, AnomaliesCommand.self,
        ]
    )
}
