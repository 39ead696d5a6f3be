import ArgumentParser
import Foundation

/// `ledger`: the order ledger's service and its replay, audit and finance tools.
@main
struct LedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "An event-sourced order ledger for in-app and server-side payments.",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, TokensCommand.self,
            HistoryCommand.self, RebuildCommand.self, VerifyCommand.self, SealCommand.self, DigestCommand.self,
            ExportCommand.self, ReportCommand.self, ReconcileCommand.self, AnomaliesCommand.self, RecoverCommand.self,
            DevTokenCommand.self, ConsumersCommand.self, WebhooksCommand.self,
        ]
    )

    /// Runs the command as `AsyncParsableCommand.main` does, with standard output flushed at the end, and a reader
    /// that went away (`OutputClosed`) ending the command quietly.
    static func main() async {
        // A closed pipe is an error of the write (EPIPE), handled where it happens, not a signal that kills at once.
        signal(SIGPIPE, SIG_IGN)
        var parsed: (any ParsableCommand.Type)?
        do {
            var command = try parseAsRoot()
            parsed = type(of: command)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            try StandardOutput.flush()
        } catch is OutputClosed {
            Foundation.exit(StandardOutput.closedStatus)
        } catch let error as ValidationError where parsed != nil {
            // A usage error found once the command ran (a period, a time): said with that command's usage, as a
            // parsing error is, where `exit(withError:)` would show `ledger <subcommand>`.
            try? StandardOutput.flush()
            let usage = usageString(for: parsed ?? Self.self)
            try? FileHandle.standardError.write(contentsOf: Data("Error: \(error.message)\nUsage: \(usage)\n".utf8))
            Foundation.exit(ExitCode.validationFailure.rawValue)
        } catch {
            try? StandardOutput.flush()
            Self.exit(withError: error)
        }
    }
}
