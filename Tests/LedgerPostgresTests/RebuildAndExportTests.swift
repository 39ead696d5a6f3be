import Foundation
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

@Suite("Audit: rebuilding projections and exporting the log")
struct RebuildAndExportTests {
    @Test func rebuildWhileWritersAppendLeavesProjectionsEqualToTheFoldAndFailsNoRequest() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            try await recordHappyOrders(40, prefix: "before", on: ledger)
            let writers = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<4 {
                        group.addTask { try await recordHappyOrders(10, prefix: "during-\(writer)", on: ledger) }
                    }
                    try await group.waitForAll()
                }
            }
            var rebuilds: [ProjectionRebuild.Result] = []
            for _ in 0..<3 {  // several swaps while the writers run
                rebuilds.append(try await ProjectionRebuild(client: client).run(pageSize: 50))
            }
            try await writers.value  // no writer request failed
            let report = try await LedgerVerifier(client: client).verify()
            #expect(report.drift.isEmpty, "\(report.drift.prefix(5))")
            #expect(report.ordersChecked == 80)
            #expect(rebuilds.allSatisfy { $0.events >= 240 })
            #expect(try await ledger.order("during-3-9")?.state == .finished)
            #expect(try await ledger.transaction(try #require(ledger.order("during-0-0")?.transactionId)) != nil)
        }
    }

    @Test func aRebuildRestoresAnEditedProjection() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            try await recordHappyOrders(3, on: ledger)
            try await client.query("UPDATE orders SET state = 'created' WHERE order_id = 'order-1'")
            try await client.query("DELETE FROM order_transactions WHERE order_id = 'order-2'")
            #expect(try await !LedgerVerifier(client: client).verify().drift.isEmpty)
            let result = try await ProjectionRebuild(client: client).run()
            #expect(result.events == 18 && result.orders == 3)
            #expect(try await LedgerVerifier(client: client).verify().passed)
            #expect(try await ledger.order("order-1")?.state == .finished)
        }
    }

    @Test(arguments: EventExport.Format.allCases)
    func anExportHoldsEveryEventOnceInFeedOrderWithHashesThatRecompute(format: EventExport.Format) async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            try await recordHappyOrders(4, on: ledger)
            var lines: [String] = []
            let count = try await EventExport(format: format).run(AuditLog(client: client)) { lines.append($0) }
            #expect(count == 24)
            let records = format == .jsonl
                ? try lines.map { try ExportRecord(jsonl: $0) }
                : try CSVReader.records(in: Array(lines.map { $0 + "\n" }.joined().utf8)).dropFirst().map { try ExportRecord(csv: $0.fields) }
            #expect(records.count == 24)
            #expect(Set(records.map(\.position)).count == 24, "every event once")
            // The feed may lag behind other tests' open transactions; what it serves is a prefix of the export.
            let feed = try await ledger.store.readAll(after: nil, limit: 100)
            #expect(Array(records.map(\.position).prefix(feed.count)) == feed.map(\.position), "in feed order")
            var lastHash: [String: String] = [:]
            for record in records {
                #expect(record.previousHash == lastHash[record.orderId], "chains onto the order's previous event")
                let recomputed = EventSeal.hash(previous: record.previousHash.flatMap([UInt8].init(hex:)), canonical: Array(record.canonical.utf8))
                #expect(recomputed.hex == record.hash)
                lastHash[record.orderId] = record.hash
            }
        }
    }

    @Test func anExportCanBeLimitedToAnOrderOrARange() async throws {
        try await TestDatabase.withClient { client in
            try await recordHappyOrders(3, on: Ledger(client: client))
            let log = AuditLog(client: client)
            var lines: [String] = []
            #expect(try await EventExport(format: .jsonl, orderId: "order-1").run(log) { lines.append($0) } == 6)
            #expect(try lines.allSatisfy { try ExportRecord(jsonl: $0).orderId == "order-1" })
            #expect(try await EventExport(format: .jsonl, from: .position(4), to: .position(9)).run(log) { _ in } == 6)
            let future = Date().addingTimeInterval(3600)
            #expect(try await EventExport(format: .jsonl, from: .time(future)).run(log) { _ in } == 0)
        }
    }
}

/// One exported line, read back the way an auditor's script would.
struct ExportRecord {
    var position: Int64
    var orderId: String
    var previousHash: String?
    var hash: String
    var canonical: String

    init(jsonl line: String) throws {
        let json = try JSONValue(parsing: Array(line.utf8))
        guard case .int(let position)? = json["position"], case .string(let orderId)? = json["orderId"],
              case .string(let hash)? = json["hash"], case .string(let canonical)? = json["canonical"]
        else { throw ExportLineError(line: line) }
        let previous: String? = if case .string(let previous)? = json["previousHash"] { previous } else { nil }
        self.init(position: position, orderId: orderId, previousHash: previous, hash: hash, canonical: canonical)
    }

    /// One CSV record of the export, as the project's CSV reader reads it.
    init(csv fields: [String]) throws {
        guard fields.count == 13, let position = Int64(fields[0]) else { throw ExportLineError(line: fields.joined(separator: ",")) }
        self.init(
            position: position, orderId: fields[1], previousHash: fields[10].isEmpty ? nil : fields[10], hash: fields[11],
            canonical: fields[12])
    }

    init(position: Int64, orderId: String, previousHash: String?, hash: String, canonical: String) {
        self.position = position
        self.orderId = orderId
        self.previousHash = previousHash
        self.hash = hash
        self.canonical = canonical
    }
}

struct ExportLineError: Error {
    let line: String
}
