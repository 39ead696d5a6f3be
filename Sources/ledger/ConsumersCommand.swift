import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres

/// `ledger consumers`: every feed consumer's place in the feed and how far behind it is (`FeedConsumers.list`).
struct ConsumersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consumers",
        abstract: "List the feed's consumers: position, events handled, lag (events and seconds), who holds each.",
        discussion: """
            A consumer reads the feed and keeps its place in the database (docs/architecture.md, "Consumers of the \
            feed"). LAG is the events recorded after its position, and the age of the oldest of them.
            """)
    @Flag(help: "Print {\"consumers\": [{name, position, handled, lagEvents, lagSeconds, leasedBy, leasedUntil, advancedAt}]}.")
    var json = false
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let consumers = try await database.withLedger { opened in try await opened.consumers.list() }
        if json {
            return try StandardOutput.line(JSONValue.object(["consumers": .array(consumers.map { consumer in
                .object([
                    "name": .string(consumer.name), "position": consumer.position.map(JSONValue.int) ?? .null,
                    "handled": .int(consumer.handled), "lagEvents": .int(consumer.lagEvents),
                    "lagSeconds": .double((consumer.lagSeconds * 1000).rounded() / 1000),
                    "leasedBy": consumer.leasedBy.map(JSONValue.string) ?? .null,
                    "leasedUntil": consumer.leasedUntil.map { .string(RFC3339.format($0)) } ?? .null,
                    "advancedAt": consumer.advancedAt.map { .string(RFC3339.format($0)) } ?? .null,
                ])
            })]).canonicalJSON)
        }
        guard !consumers.isEmpty else { return try StandardOutput.line("no feed consumers yet") }
        try StandardOutput.line(Table(
            ["CONSUMER", "POSITION", "HANDLED", "LAG EVENTS", "LAG", "HELD BY", "UNTIL"],
            consumers.map { consumer in
                [consumer.name, consumer.position.map(String.init) ?? "-", String(consumer.handled),
                 String(consumer.lagEvents), String(format: "%.1f s", consumer.lagSeconds), consumer.leasedBy ?? "-",
                 consumer.leasedUntil.map(RFC3339Text) ?? "-"]
            }, numeric: [1, 2, 3, 4]).rendered)
    }
}
