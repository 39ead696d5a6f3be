import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
@testable import LedgerWebhooks
import Synchronization
import Testing

/// The dispatcher's loop as `serve` runs it, on the real clock: endpoints do not wait for one another, and nodes do
/// not send one endpoint's event twice at once.
@Suite("Webhooks: endpoints apart, nodes together")
struct WebhookNodesTests {
    /// One endpoint that holds its answer (past 10 s, until the test ends) delays no other.
    @Test func aSlowEndpointDelaysNoOther() async throws {
        let slowAnswered = Gate()
        let slow = WebhookReceiver { _ in
            await slowAnswered.wait()
            return (.noContent, nil)
        }
        try await WebhookFixture.run { fixture in
            try await slow.run { slowURL in
                _ = try await fixture.database.webhooks.add(
                    name: "slow", url: try WebhookEndpointURL(slowURL), selectors: [try #require(WebhookEventSelector("*"))])
                // The slow answer must stay in flight until the fast endpoint has both events: the fixture's 30 s
                // timeout ended it first once, when the whole suite's start took the machine for minutes (155 s).
                let dispatcher = fixture.dispatcher { $0.timeout = .seconds(600) }
                let loop = Task { await dispatcher.run(every: .milliseconds(50)) }
                defer { loop.cancel() }
                // The loop queues what is recorded (the feed consumer `webhooks`) and sends it.
                _ = try await fixture.database.ledger.record(
                    orderId: "first", events: [Lifecycle().created], metadata: EventMetadata(actor: "test", requestId: nil))
                #expect(await eventually(within: .seconds(120)) { slow.inFlight.withLock { $0.now } == 1 && fixture.receiver.all.count == 1 })
                _ = try await fixture.database.ledger.record(
                    orderId: "second", events: [Lifecycle().created], metadata: EventMetadata(actor: "test", requestId: nil))
                // Bounded only against a hang: the slow one's answer never comes before the gate opens below.
                #expect(await eventually(within: .seconds(120)) { fixture.receiver.all.count == 2 },
                        "the fast endpoint has its second event while the slow one still holds its first")
                #expect(slow.all.isEmpty && slow.inFlight.withLock { $0.now } == 1, "the slow one's answer has not come")
                slowAnswered.open()
            }
        }
    }

    /// An event this node records starts the loop's next round (`NewEvents`): each is sent long before the next tick,
    /// ten minutes away, for which it waited before.
    @Test func anEventThisNodeRecordsIsSentWithoutWaitingForTheTick() async throws {
        try await WebhookFixture.run { fixture in
            let dispatcher = fixture.dispatcher()
            let loop = Task { await dispatcher.run(every: .seconds(600)) }
            defer { loop.cancel() }
            for order in ["first", "second", "third"] {
                let sent = fixture.receiver.all.count
                _ = try await fixture.database.ledger.record(
                    orderId: order, events: [Lifecycle().created], metadata: EventMetadata(actor: "test", requestId: nil))
                #expect(await eventually(within: .seconds(120)) { fixture.receiver.all.count == sent + 1 }, "\(order) sent")
            }
        }
    }

    /// The loop keeps an endpoint's connections from one round to the next (a round ends whenever its queue runs
    /// dry): events sent rounds apart come on one connection, until the sender is a minute old (though used half a
    /// minute before) and its host is resolved and checked again, on a new connection.
    @Test func anEndpointsConnectionOutlivesItsRoundsForAMinute() async throws {
        try await WebhookFixture.run { fixture in
            let dispatcher = fixture.dispatcher()
            let loop = Task { await dispatcher.run(every: .milliseconds(50)) }
            defer { loop.cancel() }
            let half = WebhookSenders.maximumAge / 2
            for (order, ageing) in [("first", 0), ("second", 0), ("half-a-minute-on", half), ("a-minute-on", half)] {
                fixture.clock.advance(ageing)
                let sent = fixture.receiver.all.count
                _ = try await fixture.database.ledger.record(
                    orderId: order, events: [Lifecycle().created], metadata: EventMetadata(actor: "test", requestId: nil))
                #expect(await eventually(within: .seconds(120)) { fixture.receiver.all.count == sent + 1 }, "\(order) sent")
                // The round that sent it has let the endpoint go: a round still going would send the next order's
                // event too, on the sender it took before the clock moved (it did once, on a busy machine).
                #expect(try await eventually(within: .seconds(120)) {
                    try await fixture.database.webhooks.endpoint("backend", now: fixture.clock.now)?.deliveringNode == nil
                }, "\(order)'s round over")
            }
            let connections = fixture.receiver.all.map(\.connection)
            #expect(connections == [1, 1, 1, 2], "the later rounds on the first's connection; a minute on, a new sender and connection")
        }
    }

    /// Three nodes run the loop on one endpoint while orders are recorded (each node queueing when it holds the feed
    /// consumer, sending when it holds the endpoint): every event arrives, none while another copy of it is in flight,
    /// none twice (no attempt failed), each stream's in order.
    @Test func threeNodesSendOneEndpointWithoutConcurrentDuplicates() async throws {
        let receiver = WebhookReceiver { _ in
            try? await Task.sleep(for: .milliseconds(5))
            return (.noContent, nil)
        }
        try await WebhookFixture.run(receiver: receiver) { fixture in
            let nodes = ["node-a", "node-b", "node-c"].map { name in fixture.dispatcher(node: name) }
            let loops = nodes.map { node in Task { await node.run(every: .milliseconds(50)) } }
            defer { loops.forEach { $0.cancel() } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask { try await recordHappyOrders(5, prefix: "writer\(writer)", on: fixture.database.ledger) }
                }
                try await group.waitForAll()
            }
            #expect(await eventually(within: .seconds(60)) { Set(receiver.all.map(\.id)).count == 120 })
            let state = receiver.inFlight.withLock { $0 }
            #expect(state.concurrentDuplicates == 0, "no event in flight twice at once")
            #expect(receiver.all.count == 120, "no event sent twice: none failed")
            let acknowledged = receiver.acknowledged()
            #expect(acknowledged.count == 20 && acknowledged.values.allSatisfy { $0 == [1, 2, 3, 4, 5, 6] })
            let byNode = Dictionary(grouping: try await fixture.database.webhooks.deliveries(
                "backend", state: .delivered, before: nil, limit: 500, now: fixture.clock.now), by: { $0.lastAttempt?.node ?? "-" })
            print("webhooks, three nodes on one endpoint: 120 events, \(receiver.all.count) deliveries, \(state.concurrentDuplicates) in flight twice at once, at most \(state.most) in flight; by node: \(byNode.mapValues(\.count).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        }
    }
}
