import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Synchronization
import Testing

/// Consumers of the feed (schema/022, `FeedConsumers`): handle, then advance; one node at a time; nothing skipped.
@Suite("Feed consumers: a place in the feed kept in the database")
struct FeedConsumerTests {
    /// What a consumer was handed, page by page.
    final class Handled: Sendable {
        let pages = Mutex<[[StoredEvent]]>([])
        var events: [StoredEvent] { pages.withLock { $0.flatMap { $0 } } }
        var positions: [Int64] { events.map(\.position) }
    }

    /// A clock a test moves: a lease runs out when the test says so.
    final class Clock: Sendable {
        let time = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        var now: Date { time.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
    }

    static func feedOrder(_ client: SessionPool) async throws -> [Int64] {
        var positions: [Int64] = []
        try await AuditLog(client: client).forEachInFeedOrder { positions.append($0.event.position); return true }
        return positions
    }

    @Test func aConsumerHandlesEveryEventOnceInFeedOrderAndGoesOnWhereItStopped() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            try await recordHappyOrders(4, on: database.ledger)
            let handled = Handled()
            let consumer = FeedConsumer(name: "audit-copy") { page in handled.pages.withLock { $0.append(page) } }
            #expect(try await database.consumers.drain(consumer, pageSize: 5, expected: 24) == 24)
            #expect(handled.pages.withLock { $0.allSatisfy { (1...5).contains($0.count) } })
            #expect(handled.positions == (try await Self.feedOrder(client)))
            #expect(try await database.consumers.run(consumer, node: "a") == 0, "nothing new: nothing handled")

            try await recordHappyOrders(1, prefix: "later", on: database.ledger)
            #expect(try await database.consumers.drain(consumer, expected: 6) == 6)
            #expect(handled.positions == (try await Self.feedOrder(client)), "each event once, in feed order")
            let listed = try #require(try await database.consumers.list().first)
            #expect(listed.name == "audit-copy" && listed.handled == 30 && listed.lagEvents == 0 && listed.lagSeconds == 0)
            #expect(listed.position == handled.positions.last)
        }
    }

    /// At least once: a page whose handling failed is handed over again, from the page after the last advance.
    @Test func aPageWhoseHandlingFailedIsHandledAgainAndNoneIsSkipped() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            try await recordHappyOrders(2, on: database.ledger)
            let handled = Handled()
            let failures = Mutex(1)
            let consumer = FeedConsumer(name: "flaky") { page in
                if handled.pages.withLock({ $0.count }) == 1, failures.withLock({ $0 -= 1; return $0 >= 0 }) {
                    throw HandlingFailed()
                }
                handled.pages.withLock { $0.append(page) }
            }
            // Drained until the failure: the first page handled, the second failed.
            await #expect(throws: HandlingFailed.self) { try await database.consumers.drain(consumer, pageSize: 4, expected: 12) }
            let first = handled.events.count
            #expect((1...4).contains(first))
            let listed = try #require(try await database.consumers.list().first)
            #expect(listed.handled == first && listed.lagEvents == 12 - first && listed.lagSeconds > 0)
            #expect(try await database.consumers.drain(consumer, pageSize: 4, expected: 12 - first) == 12 - first)
            #expect(handled.positions == (try await Self.feedOrder(client)))
        }
    }

    struct HandlingFailed: Error {}

    /// One node at a time: a node that stopped mid-round (its handling failed; it might as well have died) holds the
    /// consumer until its lease runs out; then another node takes it and goes on from the last position written.
    @Test func aConsumerIsHeldByOneNodeUntilItsLeaseRunsOutThenTheNextGoesOnFromItsPosition() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            try await recordHappyOrders(2, on: database.ledger)
            let clock = Clock()
            let handled = Handled()
            let dies = FeedConsumer(name: "shared") { page in
                if !handled.pages.withLock({ $0.isEmpty }) { throw HandlingFailed() }
                handled.pages.withLock { $0.append(page) }
            }
            // Node a handles a page, then "dies" on its next (its lease left as it was).
            var roundsOfA = 0
            await #expect(throws: HandlingFailed.self) {
                while roundsOfA < 100 {
                    roundsOfA += 1
                    _ = try await database.consumers.run(dies, node: "a", now: { clock.now }, lease: .seconds(30), pageSize: 5)
                }
            }
            let handledByA = handled.events.count
            let survivor = FeedConsumer(name: "shared") { page in handled.pages.withLock { $0.append(page) } }
            clock.advance(29)
            #expect(try await database.consumers.run(survivor, node: "b", now: { clock.now }) == nil, "a's lease holds")
            #expect(try await database.consumers.list().first?.leasedBy == "a")
            clock.advance(2)
            var handledByB = 0
            while handledByA + handledByB < 12 {
                handledByB += try #require(try await database.consumers.run(survivor, node: "b", now: { clock.now }))
            }
            #expect(handled.positions == (try await Self.feedOrder(client)))
            #expect(try await database.consumers.list().first?.leasedBy == "b")
        }
    }

    /// Exactly once, when the effect is in the database: written in the transaction that advances, so a handling that
    /// fails takes its effect back with it.
    @Test func aConsumerWritingInTheAdvancingTransactionHasEveryEventExactlyOnce() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            try await client.query("CREATE TABLE copied (event_id uuid NOT NULL, position bigint NOT NULL)")
            try await recordHappyOrders(3, on: database.ledger)
            let pages = Mutex(0)
            let consumer = FeedConsumer(name: "copier") { page, connection in
                try await connection.query(
                    "INSERT INTO copied SELECT * FROM unnest(\(page.map(\.eventId))::uuid[], \(page.map(\.position))::int8[])",
                    logger: .init(label: "test"))
                // The second page fails after its rows were written.
                if pages.withLock({ $0 += 1; return $0 == 2 }) { throw HandlingFailed() }
            }
            await #expect(throws: HandlingFailed.self) { try await database.consumers.drain(consumer, pageSize: 5, expected: 18) }
            let advanced = try #require(try await database.consumers.list().first?.handled)
            #expect(try await database.consumers.drain(consumer, pageSize: 5, expected: 18 - Int(advanced)) == 18 - Int(advanced))
            var copied: [Int64] = []
            for try await position in try await client.query("SELECT position FROM copied ORDER BY position").decode(Int64.self) {
                copied.append(position)
            }
            #expect(copied == (try await Self.feedOrder(client)).sorted(), "every event once")
        }
    }

    /// Appends from many clients at once while the consumer's rounds run: every event is handled, once, in feed
    /// order, and the ledger verifies.
    @Test func aConsumerBesideConcurrentAppendsSkipsNothing() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            let handled = Handled()
            let consumer = FeedConsumer(name: "beside") { page in handled.pages.withLock { $0.append(page) } }
            let finished = Mutex(false)
            let appending = Task {
                defer { finished.withLock { $0 = true } }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<8 {
                        group.addTask { try await recordHappyOrders(5, prefix: "w\(writer)", on: database.ledger) }
                    }
                    try await group.waitForAll()
                }
            }
            // Rounds while the appends go on; once they have ended, rounds until what is left is read (a round can end
            // early at the feed's horizon, while another test's transaction is open: `drain`).
            while !finished.withLock({ $0 }) {
                _ = try await database.consumers.run(consumer, node: "a", pageSize: 7)
            }
            try await appending.value
            try await database.consumers.drain(consumer, pageSize: 7, expected: 240 - handled.events.count)
            #expect(handled.events.count == 240)
            #expect(Set(handled.events.map(\.eventId)).count == 240)
            #expect(handled.positions == (try await Self.feedOrder(client)))
            #expect(try await database.operations.verify().passed)
        }
    }

    @Test func aNameTheSchemaWouldRefuseIsRefusedBeforeAnythingIsWritten() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            for name in ["", "Upper", "9lives", "has space", String(repeating: "a", count: 64)] {
                await #expect(throws: InvalidConsumerName.self) {
                    try await database.consumers.run(FeedConsumer(name: name) { _ in }, node: "a")
                }
            }
            let listed = try await database.consumers.list()
            #expect(listed.isEmpty)
        }
    }
}
