import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("Ledger: recording an order's events")
struct LedgerRecordTests {
    let actor = EventMetadata(actor: "test-suite", requestId: "req-1")

    @Test func aHappyPathEndsFinishedAndTheProjectionEqualsTheFold() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            var last: Recorded?
            for event in lifecycle.happyPath {
                last = try await ledger.record(orderId: "order-1", events: [event], metadata: actor)
            }
            let order = try #require(try await ledger.order("order-1"))
            #expect(order.state == .finished)
            #expect(order.version == 6)
            #expect(order.transactionId == lifecycle.transactionId)
            #expect(order == last?.order)
            let folded = OrderDecider.fold(try await ledger.store.read(.order("order-1")).map { try $0.recordedOrderEvent() })
            #expect(order == folded)
            let stored = try await ledger.store.read(.order("order-1"))
            try #require(stored.count >= 3)
            #expect(stored[0].metadata == ["actor": "test-suite", "requestId": "req-1"])
            // The receipt itself is never kept, only its hash.
            #expect(stored[2].data["receipt"] == nil)
            #expect(stored[2].data["receiptSha256"] != nil)
        }
    }

    @Test func aBatchIsRecordedAllOrNothing() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            // The fifth event grants to another account: the whole batch is refused.
            let batch = [lifecycle.created, lifecycle.queued, lifecycle.receipt, lifecycle.verified, lifecycle.granted(to: "intruder")]
            await #expect(throws: Refusal.accountMismatch(expected: lifecycle.accountId, actual: "intruder")) {
                try await ledger.record(orderId: "order-1", events: batch, metadata: actor)
            }
            #expect(try await ledger.order("order-1") == nil)
            #expect(try await ledger.store.count("events") == 0)
            #expect(try await ledger.store.count("order_transactions") == 0)

            let recorded = try await ledger.record(orderId: "order-1", events: lifecycle.happyPath, metadata: actor)
            #expect(recorded.append.events.map(\.version) == Array(1...6))
            #expect(recorded.order.state == .finished)
        }
    }

    @Test func aRefusedEventLeavesEventsAndProjectionsUntouched() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            for event in [lifecycle.created, lifecycle.queued, lifecycle.receipt] {
                _ = try await ledger.record(orderId: "order-1", events: [event], metadata: actor)
            }
            let before = try await ledger.order("order-1")
            let eventsBefore = try await ledger.store.count("events")
            await #expect(throws: Refusal.self) {
                try await ledger.record(orderId: "order-1", events: [lifecycle.granted()], metadata: actor)
            }
            await #expect(throws: Refusal.orderExists(orderId: "order-1")) {
                try await ledger.record(orderId: "order-1", events: [lifecycle.created], metadata: actor)
            }
            #expect(try await ledger.order("order-1") == before)
            #expect(try await ledger.store.count("events") == eventsBefore)
        }
    }

    @Test func aRetriedReceiptAfterTheGrantGetsTheOriginalResultNotARefusal() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            let receipt = lifecycle.receipt
            _ = try await ledger.record(orderId: "order-1", events: [lifecycle.created], metadata: actor)
            let original = try await ledger.record(orderId: "order-1", events: [receipt], metadata: actor)
            for event in [lifecycle.verified, lifecycle.granted()] {
                _ = try await ledger.record(orderId: "order-1", events: [event], metadata: actor)
            }
            let retry = try await ledger.record(orderId: "order-1", events: [receipt], metadata: actor)
            #expect(retry.append.isReplay)
            #expect(retry.append.events == original.append.events)
            #expect(retry.order == original.order)
            #expect(retry.order.state == .receiptReceived)
            #expect(try await ledger.order("order-1")?.state == .granted)
        }
    }

    @Test func twoOrdersRacingToClaimOneTransactionFromSixteenTasksGrantItOnce() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            var first = Lifecycle()
            first.transactionId = "tx-raced"
            var second = first
            second.accountId = "acct-2"
            _ = try await ledger.record(orderId: "order-a", events: [first.created], metadata: actor)
            _ = try await ledger.record(orderId: "order-b", events: [second.created], metadata: actor)
            let outcomes = await withTaskGroup(of: Result<Recorded, any Error>.self) { group in
                for task in 0..<16 {
                    let (orderId, lifecycle) = task.isMultiple(of: 2) ? ("order-a", first) : ("order-b", second)
                    group.addTask {
                        await attempt {
                            try await ledger.record(
                                orderId: orderId, events: [lifecycle.receipt, lifecycle.verified, lifecycle.granted()], metadata: actor)
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let granted = outcomes.compactMap { try? $0.get() }
            #expect(granted.count == 1)
            for case .failure(let error) in outcomes {
                switch error as? Refusal {
                case .transactionBoundElsewhere?, .alreadyGranted?, .invalidTransition?: break
                default: Issue.record("unexpected outcome \(error)")
                }
            }
            let orders = [try await ledger.order("order-a"), try await ledger.order("order-b")]
            #expect(orders.filter { $0?.grantedAt != nil }.count == 1)
            #expect(try await ledger.store.count("order_transactions") == 1)
        }
    }

    @Test func aReceiptClaimedByAnotherOrderIsRefusedNamingIt() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            var other = lifecycle
            other.accountId = "acct-2"
            _ = try await ledger.record(orderId: "order-a", events: [lifecycle.created, lifecycle.receipt], metadata: actor)
            _ = try await ledger.record(orderId: "order-b", events: [other.created], metadata: actor)
            await #expect(throws: Refusal.transactionBoundElsewhere(transactionId: lifecycle.transactionId, orderId: "order-a")) {
                try await ledger.record(orderId: "order-b", events: [other.receipt], metadata: actor)
            }
        }
    }

    @Test func theTransactionAnswerSaysWhetherItWasCredited() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            #expect(try await ledger.transaction(lifecycle.transactionId) == nil)
            _ = try await ledger.record(orderId: "order-1", events: Array(lifecycle.happyPath.prefix(4)), metadata: actor)
            #expect(try await ledger.transaction(lifecycle.transactionId)?.grantedAt == nil)
            _ = try await ledger.record(orderId: "order-1", events: [lifecycle.granted()], metadata: actor)
            let status = try #require(try await ledger.transaction(lifecycle.transactionId))
            #expect(status.orderId == "order-1")
            #expect(status.state == .granted)
            #expect(status.grantedAt != nil)
            #expect(status.finishedAt == nil)
        }
    }

    @Test func historyAsOfEachEventShowsExactlyTheEventsUpToIt() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            for event in Lifecycle().happyPath {
                _ = try await ledger.record(orderId: "order-1", events: [event], metadata: actor)
            }
            let full = try #require(try await ledger.history("order-1"))
            #expect(full.entries.map(\.stateAfter) == [.created, .paymentQueued, .receiptReceived, .verified, .granted, .finished])
            for (index, entry) in full.entries.enumerated() {
                let past = try #require(try await ledger.history("order-1", asOf: entry.event.recordedAt))
                #expect(past.entries.count == index + 1)
                #expect(past.order?.state == entry.stateAfter)
            }
            try #require(!full.entries.isEmpty)
            let before = try #require(try await ledger.history("order-1", asOf: full.entries[0].event.recordedAt.addingTimeInterval(-60)))
            #expect(before.entries.isEmpty && before.order == nil)
            #expect(try await ledger.history("never-seen") == nil)
        }
    }

    @Test func malformedEventsAreRefusedNamingTheFieldAndWriteNothing() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            let bad = lifecycle.submission("order.created", ["accountId": "a", "productId": "p", "provider": "app_store",
                                                               "amount": ["value": -1, "currency": "USD"]])
            do {
                _ = try await ledger.record(orderId: "order-1", events: [lifecycle.created, bad], metadata: actor)
                Issue.record("a negative amount was accepted")
            } catch LedgerError.invalidEvent(let field, _) {
                #expect(field == "events[1].data.amount.value")
            }
            await #expect(throws: LedgerError.unknownEventType(field: "type", type: "order.teleported")) {
                try await ledger.record(orderId: "order-1", events: [lifecycle.submission("order.teleported", [:])], metadata: actor)
            }
            await #expect(throws: LedgerError.self) {
                try await ledger.record(orderId: "bad id with spaces", events: [lifecycle.created], metadata: actor)
            }
            #expect(try await ledger.store.count("events") == 0)
        }
    }
}
