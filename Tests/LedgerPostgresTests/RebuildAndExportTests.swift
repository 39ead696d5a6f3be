import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

@Suite("Audit: rebuilding projections and exporting the log")
struct RebuildAndExportTests {
    /// Appends land while the first rebuild is mid-way, for certain: its progress callback, after the first page,
    /// refunds every order (those the page folded are stale from then on: only the catch-up can fold them again) and
    /// creates orders whose ids sort before the pages' cursor (no page will read them). Writers in the background
    /// append throughout, swaps included, and none of their requests may fail.
    @Test func rebuildWhileWritersAppendCatchesUpAndLeavesProjectionsEqualToTheFold() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let before = try await recordHappyOrders(40, prefix: "before", on: ledger)
            let writers = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<4 {
                        group.addTask { _ = try await recordHappyOrders(10, prefix: "during-\(writer)", on: ledger) }
                    }
                    try await group.waitForAll()
                }
            }
            var appendedMidway = 0
            // Two ranges of order ids folded at once, a page of 50 events each per step.
            let first = try await ProjectionRebuild(client: client).run(pageSize: 50, parallelism: 2) { progress in
                guard progress.phase == .folding, appendedMidway == 0 else { return }
                #expect(progress.events == 100 && progress.events < progress.totalEvents, "the rebuild is mid-way")
                for orderId in before { try await refund(orderId, on: ledger) }
                appendedMidway = before.count + (try await recordHappyOrders(3, prefix: "a-late", on: ledger)).count
            }
            #expect(appendedMidway == 43, "appends overlapped the rebuild")
            // The first range's first page folded 8 whole orders ("before-0", "before-1", "before-10" … "before-15"),
            // refunded since; and 3 orders were created behind its cursor. More if the background writers were.
            #expect(first.caughtUp >= 11, "the catch-up folded again what moved during the rebuild")
            // Nothing writes to these orders any more: what the first swap put in place is what is read.
            for orderId in before + ["a-late-0"] {
                let state = try await ledger.order(orderId)?.state
                #expect(state == (orderId.hasPrefix("a-late") ? .finished : .refunded), "after the first swap: \(orderId)")
            }
            for _ in 0..<2 {  // more swaps while the writers run
                _ = try await ProjectionRebuild(client: client).run(pageSize: 50)
            }
            try await writers.value  // no writer request failed
            let report = try await LedgerDatabase(client: client).operations.verify()
            #expect(report.drift.isEmpty, "the projections equal the fold of every event: \(report.drift.prefix(5))")
            #expect(report.ordersChecked == 83)
            for orderId in before { #expect(try await ledger.order(orderId)?.state == .refunded, "\(orderId)") }
            #expect(try await ledger.order("a-late-2")?.state == .finished)
            #expect(try await ledger.order("during-3-9")?.state == .finished)
            #expect(try await ledger.transaction(try #require(ledger.order("during-0-0")?.transactionId)) != nil)
        }
    }

    /// While the rebuild catches up, the live tables are locked against writers only: a read is answered at once
    /// (from the old tables), an append waits until the swap commits.
    @Test func readersGoOnButWritersWaitWhileTheRebuildCatchesUp() async throws {
        let (database, _) = try await TestDatabase.fresh()
        try await database.withClient { client in
            let ledger = Ledger(client: client)
            _ = try await recordHappyOrders(3, on: ledger)
            var lifecycle = Lifecycle()
            lifecycle.transactionId = try #require(try await ledger.order("order-1")?.transactionId)
            let abandonedRefund = lifecycle.refunded  // one event id, for the abandoned append and its retry
            let metadata = EventMetadata(actor: "test-suite", requestId: nil)
            var sawCatchUp = false
            let result = try await ProjectionRebuild(client: client).run(pageSize: 6, parallelism: 1) { progress in
                switch progress.phase {
                case .folding where progress.events == 12:
                    // order-0's fold was written with the second page (an order is done when the next one starts),
                    // and the pages have moved past it: only the catch-up can fold this refund in.
                    try await refund("order-0", on: ledger)
                case .catchingUp(let orders):
                    sawCatchUp = true
                    #expect(orders == 1)
                    // Blocked readers would wait for this very callback: the deadline turns that into a failure.
                    // (60 s: a blocked read never ends, and a busy machine running the whole suite needs room: 30 s
                    // was once not enough while the million-line reconcile ran beside it.)
                    let read = try await Deadline.$request.withValue(.seconds(60)) { try await ledger.order("order-0") }
                    #expect(read?.state == .refunded, "read from the live tables, not the half-caught-up ones")
                    // On a client of its own: the deadline closes its connection mid-query, after which PostgresNIO
                    // 1.33's pool was seen to stall (DeadlineTests, docs/operating.md).
                    _ = try await database.withClient { other in
                        await #expect(throws: DatabaseTimeout.self, "an append waits for the swap") {
                            try await Deadline.$request.withValue(.seconds(1)) {
                                try await Ledger(client: other).record(orderId: "order-1", events: [abandonedRefund], metadata: metadata)
                            }
                        }
                    }
                    let streamsLocked = try await client.query(
                        """
                        SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND relation = 'streams'::regclass
                        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                        AND mode = 'ExclusiveLock' AND granted
                        """, logger: .init(label: "test")) { rows in
                        for try await count in rows.decode(Int.self) { return count }
                        return 0
                    }
                    #expect(streamsLocked == 1, "appends are stopped at their write, which locks the stream row")
                case .folding:
                    break
                }
            }
            #expect(sawCatchUp)
            #expect(result.caughtUp == 1)
            #expect(try await LedgerDatabase(client: client).operations.verify().drift.isEmpty)
            #expect(try await ledger.order("order-0")?.state == .refunded)
            // The abandoned append's outcome was unknown to its caller (its statement may have run after the swap):
            // the caller's retry with the same event id settles it, and the refund is recorded exactly once.
            let retried = try await ledger.record(orderId: "order-1", events: [abandonedRefund], metadata: metadata)
            #expect(retried.order.state == .refunded)
            let refunds = try await ledger.store.read(.order("order-1")).filter { $0.type == "order.refunded" }
            #expect(refunds.map(\.eventId) == [abandonedRefund.eventId])
        }
    }

    /// The rebuild fills its tables first and indexes them afterwards: the projections keep every index and key
    /// the schema gave them (names aside), however many times they are rebuilt.
    @Test func rebuiltProjectionsKeepTheSchemasIndexesAndKeys() async throws {
        try await TestDatabase.withClient { client in
            try await recordHappyOrders(3, on: Ledger(client: client))
            func shape() async throws -> [String] {
                var definitions: [String] = []
                let rows = try await client.query(
                    """
                    SELECT c.relname, regexp_replace(pg_get_indexdef(i.indexrelid), '^(CREATE (UNIQUE )?INDEX )\\S+ ', '\\1'),
                           COALESCE(k.contype::text, '-')
                    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
                    LEFT JOIN pg_constraint k ON k.conindid = i.indexrelid AND k.conrelid = i.indrelid
                    WHERE c.relname IN ('orders', 'order_transactions')
                    """)
                for try await (table, index, constraint) in rows.decode((String, String, String).self) {
                    definitions.append("\(table): \(index) [\(constraint)]")
                }
                return definitions.sorted()
            }
            let schema = try await shape()
            #expect(schema.count == 8, "\(schema)")  // orders: its key and 6 indexes; order_transactions: its key
            for _ in 0..<2 { _ = try await ProjectionRebuild(client: client).run() }
            #expect(try await shape() == schema)
            #expect(try await LedgerDatabase(client: client).operations.verify().passed)
        }
    }

    @Test func aRebuildRestoresAnEditedProjection() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            try await recordHappyOrders(3, on: ledger)
            // Orders that stopped on the way: their absent times (granted, finished, refunded) must come back absent.
            let lifecycle = Lifecycle(), metadata = EventMetadata(actor: "test-suite", requestId: nil)
            _ = try await ledger.record(orderId: "only-created", events: [lifecycle.created], metadata: metadata)
            _ = try await ledger.record(
                orderId: "receipt-only", events: [lifecycle.created, lifecycle.queued, lifecycle.receipt], metadata: metadata)
            try await client.query("UPDATE orders SET state = 'created' WHERE order_id = 'order-1'")
            try await client.query("DELETE FROM order_transactions WHERE order_id = 'order-2'")
            #expect(try await !LedgerDatabase(client: client).operations.verify().drift.isEmpty)
            let result = try await ProjectionRebuild(client: client).run()
            #expect(result.events == 22 && result.orders == 5)
            #expect(try await LedgerDatabase(client: client).operations.verify().passed)
            #expect(try await ledger.order("order-1")?.state == .finished)
            let unfinished = try #require(try await ledger.order("receipt-only"))
            #expect(unfinished.grantedAt == nil && unfinished.finishedAt == nil && unfinished.refundedAt == nil)
            let unbound = try #require(try await ledger.transaction(lifecycle.transactionId))
            #expect(unbound.grantedAt == nil && unbound.finishedAt == nil && unbound.refundedAt == nil)
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
                #expect(record.previousHash == lastHash[record.stream], "chains onto the stream's previous event")
                let recomputed = EventSeal.hash(previous: record.previousHash.flatMap([UInt8].init(hex:)), canonical: Array(record.canonical.utf8))
                #expect(recomputed.hex == record.hash)
                lastHash[record.stream] = record.hash
            }
        }
    }

    @Test func anExportCanBeLimitedToAnOrderOrARange() async throws {
        try await TestDatabase.withClient { client in
            try await recordHappyOrders(3, on: Ledger(client: client))
            let log = AuditLog(client: client)
            var lines: [String] = []
            #expect(try await EventExport(format: .jsonl, orderId: "order-1").run(log) { lines.append($0) } == 6)
            #expect(try lines.allSatisfy { try ExportRecord(jsonl: $0).stream == "order order-1" })
            #expect(try await EventExport(format: .jsonl, from: .position(4), to: .position(9)).run(log) { _ in } == 6)
            let future = Date().addingTimeInterval(3600)
            #expect(try await EventExport(format: .jsonl, from: .time(future)).run(log) { _ in } == 0)
        }
    }
}

/// Refunds a happy-path order (the order's own transaction, as recorded).
func refund(_ orderId: String, on ledger: Ledger) async throws {
    let transactionId = try #require(try await ledger.order(orderId)?.transactionId)
    var lifecycle = Lifecycle()
    lifecycle.transactionId = transactionId
    _ = try await ledger.record(
        orderId: orderId, events: [lifecycle.refunded], metadata: EventMetadata(actor: "test-suite", requestId: nil))
}

/// One exported line, read back the way an auditor's script would; its stream as "KIND ID".
struct ExportRecord {
    var position: Int64
    var stream: String
    var previousHash: String?
    var hash: String
    var canonical: String

    init(jsonl line: String) throws {
        let json = try JSONValue(parsing: Array(line.utf8))
        guard case .int(let position)? = json["position"], case .string(let kind)? = json["kind"],
              case .string(let streamId)? = json["streamId"],
              case .string(let hash)? = json["hash"], case .string(let canonical)? = json["canonical"]
        else { throw ExportLineError(line: line) }
        let previous: String? = if case .string(let previous)? = json["previousHash"] { previous } else { nil }
        self.init(position: position, stream: "\(kind) \(streamId)", previousHash: previous, hash: hash, canonical: canonical)
    }

    /// One CSV record of the export, as the project's CSV reader reads it.
    init(csv fields: [String]) throws {
        guard fields.count == 14, let position = Int64(fields[0]) else { throw ExportLineError(line: "\(fields.count) fields: " + fields.joined(separator: ",")) }
        self.init(
            position: position, stream: "\(fields[1]) \(fields[2])", previousHash: fields[11].isEmpty ? nil : fields[11],
            hash: fields[12], canonical: fields[13])
    }

    init(position: Int64, stream: String, previousHash: String?, hash: String, canonical: String) {
        self.position = position
        self.stream = stream
        self.previousHash = previousHash
        self.hash = hash
        self.canonical = canonical
    }
}

struct ExportLineError: Error {
    let line: String
}
