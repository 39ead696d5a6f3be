import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// `ledger consumers`: where each consumer of the feed is, and how far behind.
@Suite("CLI: ledger consumers")
struct ConsumersCommandTests {
    @Test func consumersAreListedWithTheirPositionAndLag() async throws {
        try await TestDatabase.withURL { url, client in
            let none = try await LedgerBinary.run(["consumers"], databaseURL: url)
            #expect(none.status == 0 && none.stdout == "no feed consumers yet\n", "\(none.stdout)\(none.stderr)")

            let database = LedgerDatabase(client: client)
            try await recordHappyOrders(2, on: database.ledger)
            try await database.consumers.drain(FeedConsumer(name: "warehouse") { _ in }, node: "node-1", expected: 5)
            try await database.consumers.drain(FeedConsumer(name: "caught-up") { _ in }, node: "node-2", expected: 12)

            let json = try await LedgerBinary.run(["consumers", "--json"], databaseURL: url)
            #expect(json.status == 0, "\(json.stderr)")
            let listed = try JSONValue(parsing: Array(json.stdout.utf8))["consumers"]?.elements ?? []
            #expect(listed.map { $0["name"] } == ["caught-up", "warehouse"])
            #expect(listed.map { $0["handled"] } == [12, 5])
            #expect(listed.map { $0["lagEvents"] } == [0, 7])
            #expect(listed.map { $0["leasedBy"] } == ["node-2", "node-1"])
            let lag = listed.last?["lagSeconds"]
            #expect(lag != nil && lag != .int(0) && lag != .double(0), "the oldest unhandled event has an age")

            let table = try await LedgerBinary.run(["consumers"], databaseURL: url)
            let lines = table.stdout.split(separator: "\n")
            #expect(lines.first?.hasPrefix("CONSUMER") == true && lines.count == 3, "\(table.stdout)")
            #expect(lines.last?.hasPrefix("warehouse") == true && lines.last?.contains("node-1") == true)
        }
    }
}
