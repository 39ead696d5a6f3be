import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Logging
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
            let finished = Gate()
            let appending = Self.appendFromEightWriters(on: database.ledger, finished: finished)
            // Rounds while the appends go on; once they have ended, rounds until what is left is read (a round can end
            // early at the feed's horizon, while another test's transaction is open: `drain`).
            while !finished.isOpen {
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

    /// A consumer that passes over the events recorded before a time (the webhooks' queueing: before its first
    /// endpoint) while appends go on, the time set in the middle of them: every event recorded since is handed over,
    /// once, in feed order — none passed over because its append had not committed yet — and some before were not.
    @Test func aConsumerPassingOverOlderEventsBesideConcurrentAppendsHandsOverEveryLaterOne() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            try await client.queryToEnd("CREATE TABLE pass_mark AS SELECT '-infinity'::timestamptz AS since", logger: Self.logger)
            let handled = Handled()
            let consumer = FeedConsumer(name: "later", passesOverRecordedBefore: "SELECT since FROM pass_mark") { page, _ in
                handled.pages.withLock { $0.append(page) }
            }
            let finished = Gate()
            let appending = Self.appendFromEightWriters(on: database.ledger, finished: finished)
            // Rounds of one page, so that the mark is set while the appends go on.
            var marked = false
            while !finished.isOpen {
                _ = try await database.consumers.run(consumer, node: "a", pageSize: 7, maximumPages: 1)
                if !marked, try await database.ledger.store.count("events") >= 60 {
                    try await client.queryToEnd("UPDATE pass_mark SET since = now()", logger: Self.logger)
                    marked = true
                }
            }
            try await appending.value
            while try await (database.consumers.list().first?.lagEvents ?? 1) > 0 {
                _ = try await database.consumers.run(consumer, node: "a", pageSize: 7)
            }
            let since = try await client.query("SELECT events.position FROM events, pass_mark WHERE recorded_at >= since ORDER BY 1", .reads)
            let later = try await since.decode(Int64.self).reduce(into: [Int64]()) { $0.append($1) }
            #expect(marked && !later.isEmpty)
            #expect(Set(handled.positions).isSuperset(of: later), "every event recorded since the mark")
            #expect(handled.positions.count < 240, "some recorded before it passed over")
            #expect(Set(handled.positions).count == handled.positions.count)
            let order = try await Self.feedOrder(client)
            #expect(handled.positions == order.filter(Set(handled.positions).contains), "in feed order")
        }
    }

    static let logger = Logger(label: "test")

    /// Eight writers appending five lifecycles each (240 events) at once, in a task; `finished` opens when they end.
    static func appendFromEightWriters(on ledger: Ledger, finished: Gate) -> Task<Void, any Error> {
        Task {
            defer { finished.open() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    group.addTask { try await recordHappyOrders(5, prefix: "w\(writer)", on: ledger) }
                }
                try await group.waitForAll()
            }
        }
    }

    /// Passing over never goes past an append still open: an event it would hand over (recorded after the mark),
    /// written in a transaction that took its place in the feed before a committed one (recorded before the mark).
    /// Past the committed one, the open one's event would have been behind the consumer when it committed: lost.
    @Test func passingOverStopsBeforeAnAppendStillOpen() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            try await recordHappyOrders(1, prefix: "before", on: database.ledger)
            try await client.queryToEnd("CREATE TABLE pass_mark AS SELECT now() + interval '30 minutes' AS since", logger: Self.logger)
            let handled = Handled()
            let consumer = FeedConsumer(name: "later", passesOverRecordedBefore: "SELECT since FROM pass_mark") { page, _ in
                handled.pages.withLock { $0.append(page) }
            }
            let appended = AsyncStream.makeStream(of: Void.self)
            let mayCommit = AsyncStream.makeStream(of: Void.self)
            let open = Task {
                defer { appended.continuation.finish() }
                try await client.withTransaction(logger: Self.logger) { connection in
                    try await connection.query(
                        """
                        INSERT INTO events (kind, stream_id, version, event_id, type, data, recorded_at, canonical, hash)
                        VALUES ('order', 'open', 1, \(UUID()), 'a', '{}', now() + interval '1 hour', '\\x00', '\\x00')
                        """, logger: Self.logger)
                    appended.continuation.yield()
                    for await _ in mayCommit.stream { break }
                }
            }
            for await _ in appended.stream { break }
            try await recordHappyOrders(1, prefix: "committed", on: database.ledger)
            #expect(try await database.consumers.run(consumer, node: "a") == 0, "nothing to hand over below the open append")

            mayCommit.continuation.yield()
            try await open.value
            #expect(try await StreamingStandby.eventually(within: .seconds(60)) { try await database.consumers.run(consumer, node: "a") ?? 0 > 0 })
            // A page hands over none recorded before the mark, wherever it is in the feed.
            #expect(handled.events.map(\.stream.id) == ["open"],
                    "the open append's event once it committed; the events recorded before the mark not handed over")
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
