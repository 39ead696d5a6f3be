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
    /// A kind this build does not know (a later build's), appended through the store's own append.
    static let later = LaterKind.kind

    /// Appends `count` events to the `later` stream `id`, one append each.
    static func appendLaterKind(_ id: String, count: Int, on client: SessionPool) async throws {
        let store = EventStore(client: client)
        for version in 1...count {
            _ = try await store.append(to: id, of: LaterKind.self, events: [LaterKind.renewal(version)]) { snapshot in
                snapshot.version + 1
            }
        }
    }

    @Test func aStreamOfAnotherKindIsFedExportedSealedAndReportedNeverFoldedAsAnOrder() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            try await recordHappyOrders(1, prefix: "same-id", on: database.ledger)
            // The same id as the order: streams are named by kind and id.
            try await Self.appendLaterKind("same-id-0", count: 3, on: client)

            let feed = try await database.ledger.feed(holding: 9)
            #expect(feed.count == 9)
            #expect(feed.filter { $0.stream == StreamName(Self.later, "same-id-0") }.map(\.version) == [1, 2, 3])
            #expect(feed.filter { $0.stream == .order("same-id-0") }.count == 6)

            var lines: [JSONValue] = []
            try await database.operations.export(EventExport(format: .jsonl)) { lines.append(try JSONValue(parsing: Array($0.utf8))) }
            let later = lines.filter { $0["kind"] == "voucher" }
            #expect(later.count == 3 && later.allSatisfy { $0["streamId"] == "same-id-0" && $0["orderId"] == nil })
            #expect(lines.filter { $0["kind"] == "order" }.allSatisfy { $0["orderId"] == "same-id-0" })

            // Sealed into the digest with every other event; its seals check; only its fold is missing.
            let checkpoint = try #require(try await sealUntil(9, client))
            let report = try await database.operations.verify(pinned: PinnedDigest("\(checkpoint.pinned)"))
            #expect(report.eventsChecked == 9 && report.brokenEvents.isEmpty && report.ordersChecked == 1)
            #expect(report.drift == [.init(
                table: "streams", key: "voucher", field: "(kind)", stored: "1 streams",
                folded: "not folded: a kind this build does not know")])
            #expect(!report.passed)

            // A changed row of that kind is found by its seal, named by its stream.
            try await tamper(client, ["UPDATE events SET data = '{\"renewal\": 9}' WHERE kind = 'voucher' AND version = 2"])
            let tampered = try await database.operations.verify()
            #expect(tampered.brokenEvents.map(\.stream) == [StreamName(Self.later, "same-id-0")])
            #expect(tampered.brokenEvents.map(\.version) == [2])

            // The rebuild folds the orders, and leaves the other kind's events alone.
            let rebuilt = try await database.operations.rebuild(pageSize: 1_000)
            #expect(rebuilt.orders == 1 && rebuilt.events == 6)
            #expect(try await database.ledger.order("same-id-0")?.state == .finished)
        }
    }

    /// The append is the same for any kind: 16 concurrent writers on one stream of a second kind take turns (versions
    /// 1…16, each chained onto the one before), a retry is a replay, an event id is unique across kinds, the expected
    /// version is the stream's own, and the order of the same id is left alone.
    @Test func theAppendWritesAnotherKindWithEveryGuaranteeOfAnOrders() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            try await recordHappyOrders(1, prefix: "same-id", on: database.ledger)
            let store = EventStore(client: client)
            let stream = StreamName(Self.later, "same-id-0")
            try await withThrowingTaskGroup(of: AppendResult.self) { group in
                for n in 1...16 {
                    group.addTask {
                        try await store.append(to: stream.id, of: LaterKind.self, events: [LaterKind.renewal(n)]) {
                            $0.version + 1
                        }.result
                    }
                }
                for try await appended in group { #expect(appended.stream == stream && !appended.isReplay) }
            }
            #expect(try await store.read(stream).map(\.version) == Array(1...16))
            #expect(try await store.read(.order(stream.id)).count == 6)

            let once = LaterKind.renewal(17)
            let first = try await store.append(to: stream.id, of: LaterKind.self, events: [once]) { $0.version + 1 }.result
            let again = try await store.append(to: stream.id, of: LaterKind.self, events: [once]) { $0.version + 1 }.result
            #expect(again.isReplay && again.events == first.events && first.version == 17)

            let orderEvent = try #require(try await store.read(.order(stream.id)).first)
            await #expect(throws: EventStoreError.idempotencyConflict(eventId: orderEvent.eventId, stored: .order(stream.id))) {
                try await store.append(to: stream.id, of: LaterKind.self, events: [LaterKind.renewal(1, id: orderEvent.eventId)]) {
                    $0.version + 1
                }
            }
            await #expect(throws: EventStoreError.versionConflict(stream: stream, expected: .exactly(6), actual: 17)) {
                try await store.append(to: stream.id, of: LaterKind.self, expectedVersion: .exactly(6), events: [LaterKind.renewal(18)]) {
                    $0.version + 1
                }
            }

            // Every event's seal and chain checks; only the fold of a kind this build does not know is missing.
            let report = try await database.operations.verify()
            #expect(report.eventsChecked == 6 + 17 && report.brokenEvents.isEmpty)
            #expect(report.drift.map(\.key) == ["voucher"])
        }
    }
}

/// A second kind of stream whose projection stores nothing: its append reads and writes only what the store itself
/// keeps (the stream's head, its events, their seals). What it "projects" is the stream's version, which lets an
/// append decide from memory and be written in a group, as an order's is.
enum LaterKind: StreamProjection {
    struct Read: Sendable {}
    typealias Written = Int

    static let kind = StreamKind("voucher")
    static let readColumns = ""
    static func readJoins(claims: [String], into sql: inout PostgresQuery.StringInterpolation) {}
    static func decodeRead(_ columns: PostgresRandomAccessRow, from index: Int, stream id: String) throws -> Read { Read() }
    static let noStream = Read()
    static func read(after written: Int, stream id: String) -> Read { Read() }
    static func startsStream(firstEventType type: String) -> Bool { true }
    static func write(_ written: Int?, stream id: String, into sql: inout PostgresQuery.StringInterpolation) {}
    static func writeCheck(_ written: Int?, into sql: inout PostgresQuery.StringInterpolation) { sql.appendLiteral("true") }
    static func groupWrite(_ written: [Int], into sql: inout PostgresQuery.StringInterpolation) {}
    static let groupWriteJoins = ""
    static let groupWriteCheck = "true"

    static func renewal(_ n: Int, id: UUID = UUID()) -> NewEvent {
        NewEvent(eventId: id, type: "voucher.used", data: ["renewal": .int(Int64(n))], metadata: ["actor": "test"])
    }
}
