import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// Streams of several kinds (schema/021): the log's generic parts — feed, export, seals, digest — carry any kind; the
/// checks that fold say plainly which kinds this build cannot fold.
@Suite("Stream kinds: the log carries any kind")
struct StreamKindTests {
    /// A kind of a later build, written as that build would write it: sealed under its kind and id.
    static let later = StreamKind("subscription")

    /// Appends `count` sealed events to the `later` stream `id`, as one statement, the way an append writes them.
    static func appendLaterKind(_ id: String, count: Int, on client: SessionPool) async throws {
        let stream = StreamName(later, id)
        let recordedAt = Date(timeIntervalSince1970: 1_800_000_000.25)
        var previous: [UInt8]?
        var rows: [(UUID, String, [UInt8], [UInt8])] = []
        for version in 1...count {
            let eventId = UUID()
            let data: JSONValue = ["renewal": .int(Int64(version))]
            let canonical = EventSeal.canonicalBytes(
                stream: stream, version: version, eventId: eventId, type: "subscription.renewed", data: data,
                metadata: [:], occurredAt: nil, recordedAt: recordedAt)
            let hash = EventSeal.hash(previous: previous, canonical: canonical)
            rows.append((eventId, data.canonicalJSON, canonical, hash))
            previous = hash
        }
        try await client.query(
            """
            WITH s AS (
                INSERT INTO streams (kind, stream_id, version, last_hash) VALUES (\(later.name), \(id), \(count), \(ByteBuffer(bytes: previous ?? [])))
            )
            INSERT INTO events (kind, stream_id, version, event_id, type, data, recorded_at, canonical, hash)
            SELECT \(later.name), \(id), n.version, n.event_id, 'subscription.renewed', n.data::jsonb, \(recordedAt), n.canonical, n.hash
            FROM unnest(\(rows.map(\.0))::uuid[], \(rows.map(\.1))::text[], \(rows.map { ByteBuffer(bytes: $0.2) })::bytea[],
                        \(rows.map { ByteBuffer(bytes: $0.3) })::bytea[]) WITH ORDINALITY AS n(event_id, data, canonical, hash, version)
            """)
    }

    @Test func aStreamOfAnotherKindIsFedExportedSealedAndReportedNeverFoldedAsAnOrder() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            try await recordHappyOrders(1, prefix: "same-id", on: database.ledger)
            // The same id as the order: streams are named by kind and id.
            try await Self.appendLaterKind("same-id-0", count: 3, on: client)

            let feed = try await database.ledger.feed(after: nil, limit: 100)
            #expect(feed.count == 9)
            #expect(feed.filter { $0.stream == StreamName(Self.later, "same-id-0") }.map(\.version) == [1, 2, 3])
            #expect(feed.filter { $0.stream == .order("same-id-0") }.count == 6)

            var lines: [JSONValue] = []
            try await database.operations.export(EventExport(format: .jsonl)) { lines.append(try JSONValue(parsing: Array($0.utf8))) }
            let later = lines.filter { $0["kind"] == "subscription" }
            #expect(later.count == 3 && later.allSatisfy { $0["streamId"] == "same-id-0" && $0["orderId"] == nil })
            #expect(lines.filter { $0["kind"] == "order" }.allSatisfy { $0["orderId"] == "same-id-0" })

            // Sealed into the digest with every other event; its seals check; only its fold is missing.
            let checkpoint = try #require(try await sealUntil(9, client))
            let report = try await database.operations.verify(pinned: PinnedDigest("\(checkpoint.pinned)"))
            #expect(report.eventsChecked == 9 && report.brokenEvents.isEmpty && report.ordersChecked == 1)
            #expect(report.drift == [.init(
                table: "streams", key: "subscription", field: "(kind)", stored: "1 streams",
                folded: "not folded: a kind this build does not know")])
            #expect(!report.passed)

            // A changed row of that kind is found by its seal, named by its stream.
            try await tamper(client, ["UPDATE events SET data = '{\"renewal\": 9}' WHERE kind = 'subscription' AND version = 2"])
            let tampered = try await database.operations.verify()
            #expect(tampered.brokenEvents.map(\.stream) == [StreamName(Self.later, "same-id-0")])
            #expect(tampered.brokenEvents.map(\.version) == [2])

            // The rebuild folds the orders, and leaves the other kind's events alone.
            let rebuilt = try await database.operations.rebuild(pageSize: 1_000)
            #expect(rebuilt.orders == 1 && rebuilt.events == 6)
            #expect(try await database.ledger.order("same-id-0")?.state == .finished)
        }
    }
}
