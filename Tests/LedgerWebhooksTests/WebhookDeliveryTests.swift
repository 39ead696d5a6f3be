import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Logging
import ProviderTestSupport
@testable import LedgerWebhooks
import Synchronization
import Testing

/// Webhooks end to end: events recorded, queued by the feed consumer, sent by the dispatcher to a real HTTP receiver
/// that checks each signature with the README's code.
@Suite("Webhooks: signed, at least once, in order per stream, retried, replayable")
struct WebhookDeliveryTests {
    @Test func everyEventIsSentOnceSignedInOrderPerStreamWithItsStreamsStateAfter() async throws {
        try await WebhookFixture.run { fixture in
            let grants = try await fixture.database.webhooks.add(
                name: "grants", url: try WebhookEndpointURL(fixture.url), selectors: [try #require(WebhookEventSelector("order.granted"))])
            try await recordHappyOrders(3, on: fixture.database.ledger)
            try await fixture.queue(18)
            try await fixture.deliverAll(fixture.dispatcher())

            let all = fixture.receiver.all
            #expect(all.count == 18 + 3, "every event to backend (*), the three grants to grants")
            let mine = all.filter { fixture.verified($0) }
            #expect(mine.count == 18, "each signed with backend's secret, checked by the README's code")
            #expect(all.filter { fixture.verified($0, secret: grants) }.count == 3)
            #expect(Set(mine.map(\.id)).count == 18, "one id per event")
            let backend = Dictionary(grouping: mine, by: { $0.streamId ?? "" }).mapValues { $0.compactMap(\.version) }
            #expect(backend == ["order-0": [1, 2, 3, 4, 5, 6], "order-1": [1, 2, 3, 4, 5, 6], "order-2": [1, 2, 3, 4, 5, 6]])

            // The body: the event as the feed shows it, and the order as it stood right after it.
            let granted = try #require(mine.first { $0.streamId == "order-1" && $0.version == 5 }?.json)
            #expect(granted["type"] == .string("order.granted"))
            #expect(granted["data"]?["event"]?["orderId"] == .string("order-1"))
            #expect(granted["data"]?["order"]?["state"] == .string("granted"))
            #expect(granted["data"]?["order"]?["version"] == .int(5))
            #expect(mine.first { $0.streamId == "order-1" && $0.version == 1 }?.json?["data"]?["order"]?["state"] == .string("created"))

            let delivered = try await fixture.database.webhooks.deliveries("backend", state: .delivered, before: nil, limit: 100, now: fixture.clock.now)
            #expect(delivered.count == 18 && delivered.allSatisfy { $0.attempts == 1 && $0.lastAttempt?.status == 204 })
            #expect(try await fixture.deliverAll(fixture.dispatcher()) == 0, "nothing is sent twice")
        }
    }

    /// A 500 then a 200: the event twice, with one id; the retry waits for the plan (5 s ± 20 %), or longer for the
    /// receiver's Retry-After.
    @Test func aFailedDeliveryIsTriedAgainByThePlanWithTheSameId() async throws {
        let answers = Mutex<[Int]>([500, 503])
        let receiver = WebhookReceiver { _ in
            switch answers.withLock({ $0.isEmpty ? 204 : $0.removeFirst() }) {
            case 500: (.internalServerError, nil)
            case 503: (.serviceUnavailable, 120)
            default: (.noContent, nil)
            }
        }
        try await WebhookFixture.run(receiver: receiver) { fixture in
            _ = try await fixture.database.ledger.record(orderId: "order-1", events: [Lifecycle().created], metadata: EventMetadata(actor: "test", requestId: nil))
            try await fixture.queue(1)
            let dispatcher = fixture.dispatcher()
            #expect(try await fixture.deliverAll(dispatcher) == 1)
            #expect(try await fixture.deliverAll(dispatcher) == 0, "not due before the plan's wait")
            fixture.clock.advance(3.9)
            #expect(try await fixture.deliverAll(dispatcher) == 0, "5 s less 20 % at the most")
            fixture.clock.advance(2.2)
            #expect(try await fixture.deliverAll(dispatcher) == 1, "the second attempt: 503 with Retry-After: 120")
            fixture.clock.advance(100)
            #expect(try await fixture.deliverAll(dispatcher) == 0, "the receiver asked for 120 s")
            fixture.clock.advance(21)
            #expect(try await fixture.deliverAll(dispatcher) == 1)

            let received = fixture.receiver.all
            #expect(received.map(\.status) == [500, 503, 204])
            #expect(Set(received.map(\.id)).count == 1, "the same webhook-id each time")
            #expect(received.allSatisfy { fixture.verified($0) })
            let eventId = try #require(try await fixture.database.webhooks.deliveries("backend", state: nil, before: nil, limit: 5, now: fixture.clock.now).first?.eventId)
            let attempts = try await fixture.database.webhooks.attempts("backend", eventId: eventId)
            #expect(attempts.map(\.outcome) == [.failed, .failed, .delivered])
            #expect(attempts.map(\.status) == [500, 503, 204])
        }
    }

    /// A stream's next event waits until its earlier one is acknowledged; other streams go on.
    @Test func aStreamWaitsForItsEarlierEventWhileOthersGoOn() async throws {
        let blocked = Mutex(true)
        let receiver = WebhookReceiver { delivery in
            delivery.streamId == "stuck-0" && blocked.withLock({ $0 }) ? (.unprocessableContent, nil) : (.noContent, nil)
        }
        try await WebhookFixture.run(receiver: receiver) { fixture in
            try await recordHappyOrders(1, prefix: "stuck", on: fixture.database.ledger)
            try await recordHappyOrders(1, prefix: "free", on: fixture.database.ledger)
            try await fixture.queue(12)
            let dispatcher = fixture.dispatcher()
            try await fixture.deliverAll(dispatcher)
            #expect(fixture.receiver.acknowledged()["free-0"] == [1, 2, 3, 4, 5, 6])
            #expect(fixture.receiver.all.filter { $0.streamId == "stuck-0" }.compactMap(\.version) == [1],
                    "only its first was tried, once: the other stream's successes do not hurry a refused event's retry")
            let pending = try await fixture.database.webhooks.deliveries("backend", state: .pending, before: nil, limit: 10, now: fixture.clock.now)
            #expect(pending.count == 5 + 1 && pending.allSatisfy { $0.stream.id == "stuck-0" })
            #expect(pending.filter { $0.nextAttemptAt != nil }.map(\.version) == [1],
                    "only the oldest pending event of a stream is scheduled; the rest wait their turn")

            blocked.withLock { $0 = false }
            fixture.clock.advance(10)
            try await fixture.deliverAll(dispatcher)
            #expect(fixture.receiver.acknowledged()["stuck-0"] == [1, 2, 3, 4, 5, 6])
        }
    }

    /// A receiver down for minutes (refusing every delivery) while events keep coming gets all of them after, each
    /// stream's in order; its first success makes every waiting retry due at once.
    @Test func aReceiverDownForMinutesGetsEverythingAfterInOrderPerStream() async throws {
        let down = Mutex(true)
        let receiver = WebhookReceiver { _ in down.withLock { $0 } ? (.serviceUnavailable, nil) : (.ok, nil) }
        try await WebhookFixture.run(receiver: receiver) { fixture in
            let dispatcher = fixture.dispatcher()
            for minute in 0..<5 {
                try await recordHappyOrders(2, prefix: "minute\(minute)", on: fixture.database.ledger)
                try await fixture.queue(12)
                try await fixture.deliverAll(dispatcher)
                fixture.clock.advance(60)
            }
            #expect(fixture.receiver.acknowledged().isEmpty)
            down.withLock { $0 = false }
            fixture.clock.advance(600)
            try await fixture.deliverAll(dispatcher)
            let acknowledged = fixture.receiver.acknowledged()
            #expect(acknowledged.count == 10)
            #expect(acknowledged.values.allSatisfy { $0 == [1, 2, 3, 4, 5, 6] }, "every event once acknowledged, in order")
            #expect(try await fixture.database.webhooks.list(now: fixture.clock.now).first?.pending == 0)
        }
    }

    @Test func goneDisablesTheEndpointAtOnceAndEnableSendsItsBacklog() async throws {
        let gone = Mutex(true)
        let receiver = WebhookReceiver { _ in gone.withLock { $0 } ? (.gone, nil) : (.noContent, nil) }
        try await WebhookFixture.run(receiver: receiver) { fixture in
            try await recordHappyOrders(1, on: fixture.database.ledger)
            try await fixture.queue(6)
            let dispatcher = fixture.dispatcher()
            #expect(try await fixture.deliverAll(dispatcher) == 1)
            let endpoint = try #require(try await fixture.database.webhooks.endpoint("backend", now: fixture.clock.now))
            #expect(endpoint.health == "disabled" && endpoint.disabledReason?.contains("410") == true && endpoint.pending == 6)
            fixture.clock.advance(86_400)
            #expect(try await fixture.deliverAll(dispatcher) == 0, "nothing is sent to a disabled endpoint")

            gone.withLock { $0 = false }
            try await fixture.database.webhooks.enable("backend", now: fixture.clock.now)
            try await fixture.deliverAll(dispatcher)
            #expect(fixture.receiver.acknowledged()["order-0"] == [1, 2, 3, 4, 5, 6])
        }
    }

    /// After the last retry the endpoint is failing: listed so, nothing sent, its events still queued, all sent once
    /// an operator enables it.
    @Test func outOfRetriesTheEndpointIsFailingAndKeepsItsBacklog() async throws {
        let failing = Mutex(true)
        let receiver = WebhookReceiver { _ in failing.withLock { $0 } ? (.internalServerError, nil) : (.noContent, nil) }
        try await WebhookFixture.run(receiver: receiver) { fixture in
            let dispatcher = fixture.dispatcher { $0.retries = WebhookRetryPlan(waits: [.seconds(10)], jitter: 0) }
            try await recordHappyOrders(1, on: fixture.database.ledger)
            try await fixture.queue(6)
            try await fixture.deliverAll(dispatcher)
            fixture.clock.advance(10)
            try await fixture.deliverAll(dispatcher)
            var endpoint = try #require(try await fixture.database.webhooks.endpoint("backend", now: fixture.clock.now))
            #expect(endpoint.health == "failing" && endpoint.failingSince != nil)
            #expect(try await fixture.database.webhooks.deliveries("backend", state: .givenUp, before: nil, limit: 10, now: fixture.clock.now).count == 1)
            try await recordHappyOrders(1, prefix: "later", on: fixture.database.ledger)
            try await fixture.queue(6)
            fixture.clock.advance(86_400)
            #expect(try await fixture.deliverAll(dispatcher) == 0, "nothing is sent to a failing endpoint")
            endpoint = try #require(try await fixture.database.webhooks.endpoint("backend", now: fixture.clock.now))
            #expect(endpoint.pending == 12, "its backlog is kept")

            failing.withLock { $0 = false }
            try await fixture.database.webhooks.enable("backend", now: fixture.clock.now)
            try await fixture.deliverAll(dispatcher)
            #expect(fixture.receiver.acknowledged() == ["order-0": [1, 2, 3, 4, 5, 6], "later-0": [1, 2, 3, 4, 5, 6]])
        }
    }

    /// An endpoint added to a ledger with a history (300 events recorded an hour before) is queued only what is
    /// recorded after it, and the queueing passes over what came before unread (it walked the whole feed, 100 events
    /// a page, before the first delivery could be queued) — including an event recorded half a second before the
    /// endpoint though appended after it, as a node whose estimate of the database's clock runs behind records it.
    @Test func anEndpointAddedToALongLedgerIsQueuedWhatCameAfterWithoutTheFeedBeforeBeingRead() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            let logger = Logger(label: "test")
            try await client.queryToEnd(
                """
                INSERT INTO events (kind, stream_id, version, event_id, type, data, recorded_at, canonical, hash)
                SELECT 'order', 'before-' || g, 1, gen_random_uuid(), 'order.created', '{}', now() - interval '1 hour', '\\x00', '\\x00'
                FROM generate_series(1, 300) g
                """, logger: logger)
            _ = try await database.webhooks.add(
                name: "late", url: try WebhookEndpointURL("https://example.com/hooks"), selectors: [try #require(WebhookEventSelector("*"))])
            try await client.queryToEnd(
                """
                INSERT INTO events (kind, stream_id, version, event_id, type, data, recorded_at, canonical, hash)
                VALUES ('order', 'behind', 1, \(UUID()), 'order.created', '{}', clock_timestamp() - interval '0.5 seconds', '\\x00', '\\x00')
                """, logger: logger)
            try await recordHappyOrders(1, prefix: "after", on: database.ledger)
            // Rounds until the consumer is caught up: on a busy cluster a round may stop short at the feed's horizon.
            func caughtUp() async throws -> FeedConsumerStatus? {
                _ = try await database.consumers.run(database.webhooks.queueing, node: "a")
                return try await database.consumers.list().first { $0.name == "webhooks" && $0.lagEvents == 0 }
            }
            #expect(try await StreamingStandby.eventually { try await caughtUp() != nil })
            let queued = try await database.webhooks.deliveries("late", state: nil, before: nil, limit: 100, now: Date())
            #expect(queued.map(\.stream.id).sorted() == ["after-0", "after-0", "after-0", "after-0", "after-0", "after-0", "behind"])
            let handled = try #require(try await caughtUp()).handled
            #expect(handled < 100, "the 300 events before passed over, not read (\(handled) handled)")

            try await recordHappyOrders(1, prefix: "next", on: database.ledger)
            #expect(try await StreamingStandby.eventually { try await caughtUp()?.handled == handled + 6 }, "caught up: each event handled")
        }
    }

    /// Replay: one event, a range of positions, a range of times — sent again with the ids they had.
    @Test func replaySendsEventsAgainWithTheirIds() async throws {
        try await WebhookFixture.run { fixture in
            try await recordHappyOrders(2, on: fixture.database.ledger)
            try await fixture.queue(12)
            let dispatcher = fixture.dispatcher()
            try await fixture.deliverAll(dispatcher)
            let first = fixture.receiver.all
            #expect(first.count == 12)
            let feed = try await fixture.database.ledger.feed(holding: 12)
            try #require(feed.count == 12)

            #expect(try await fixture.database.webhooks.replay("backend", .event(feed[3].eventId), now: fixture.clock.now) == 1)
            #expect(try await fixture.database.webhooks.replay(
                "backend", .positions(from: feed[0].position, to: feed[5].position), now: fixture.clock.now) == 6)
            try await fixture.deliverAll(dispatcher)
            let again = Array(fixture.receiver.all.dropFirst(12))
            #expect(again.count == 6, "the replayed single event is in the range: queued once")
            #expect(Set(again.map(\.id)).isSubset(of: Set(first.map(\.id))), "the same ids as before")

            let recorded = try await fixture.database.webhooks.replay(
                "backend", .recorded(from: feed[0].recordedAt, to: feed[11].recordedAt.addingTimeInterval(1)), now: fixture.clock.now)
            #expect(recorded == 12)
            await #expect(throws: WebhookEndpointError.notFound("nobody")) {
                try await fixture.database.webhooks.replay("nobody", .event(feed[0].eventId), now: fixture.clock.now)
            }
        }
    }

    /// While a rotation overlaps, each delivery carries both signatures; after it, only the new one's.
    @Test func aRotatedSecretSignsBesideTheOldUntilTheOverlapEnds() async throws {
        try await WebhookFixture.run { fixture in
            let new = try await fixture.database.webhooks.rotateSecret("backend", overlap: .seconds(3_600), now: fixture.clock.now)
            try await recordHappyOrders(1, on: fixture.database.ledger)
            try await fixture.queue(6)
            let dispatcher = fixture.dispatcher()
            _ = try await dispatcher.deliverDue()
            let during = try #require(fixture.receiver.all.first)
            #expect(during.signatures.split(separator: " ").count == 2)
            #expect(fixture.verified(during) && fixture.verified(during, secret: new))

            fixture.clock.advance(3_601)
            try await recordHappyOrders(1, prefix: "after", on: fixture.database.ledger)
            try await fixture.queue(6)
            try await fixture.deliverAll(dispatcher)
            let after = try #require(fixture.receiver.all.last)
            #expect(after.signatures.split(separator: " ").count == 1)
            #expect(fixture.verified(after, secret: new) && !fixture.verified(after))
        }
    }

    /// A loopback address is refused unless allowed — a name that resolves to it too — and never connected to.
    @Test func aLoopbackReceiverIsRefusedUnlessAllowed() async throws {
        try await WebhookFixture.run { fixture in
            let byName = fixture.url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            _ = try await fixture.database.webhooks.add(
                name: "by-name", url: try WebhookEndpointURL(byName), selectors: [try #require(WebhookEventSelector("*"))])
            _ = try await fixture.database.ledger.record(orderId: "order-1", events: [Lifecycle().created], metadata: EventMetadata(actor: "test", requestId: nil))
            try await fixture.queue(1)
            #expect(try await fixture.deliverAll(fixture.dispatcher { $0.policy = .strict }) == 2)
            #expect(fixture.receiver.all.isEmpty, "nothing reached the receiver")
            for name in ["backend", "by-name"] {
                let last = try #require(try await fixture.database.webhooks.deliveries(name, state: .pending, before: nil, limit: 1, now: fixture.clock.now).first?.lastAttempt)
                #expect(last.outcome == .refusedAddress && last.response.contains("127.0.0.1"))
            }
        }
    }
}
