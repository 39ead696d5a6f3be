import ArgumentParser
import Foundation
import LedgerPostgres

/// `ledger export`: events with hashes, in feed order, to standard output.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Stream events with their hashes to standard output, in feed order.")

    @Option(help: "First event: a position, a date (YYYY-MM-DD, UTC) or an RFC 3339 recorded time (inclusive).") var from: String?
    @Option(help: "Last event: a position, a date (UTC, the whole day included) or an RFC 3339 recorded time (inclusive).") var to: String?
    @Option(name: .customLong("order"), help: "Only this order's events.") var orderId: String?
    @Option(help: "jsonl or csv.") var format: String = "jsonl"
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        guard let format = EventExport.Format(rawValue: format) else { throw ValidationError("--format must be jsonl or csv") }
        let bound = { (name: String, text: String?) throws -> EventExport.Bound? in
            try text.map { text in
                guard let bound = EventExport.Bound(text, endOfDay: name == "to") else {
                    throw ValidationError("--\(name) must be a position (digits), a date (YYYY-MM-DD) or an RFC 3339 time")
                }
                return bound
            }
        }
        let export = EventExport(format: format, from: try bound("from", from), to: try bound("to", to), orderId: orderId)
        _ = try await database.withLedger { opened in
            try await opened.operations.export(export) { line in try StandardOutput.line(line) }
        }
    }
}
