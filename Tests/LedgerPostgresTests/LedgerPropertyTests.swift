import Foundation
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("Ledger: random histories keep every invariant")
struct LedgerPropertyTests {
    /// Concurrent writers post random events (valid or not, in any order) to a few orders sharing a few
    /// transactionIds. Whatever was accepted, each stored projection must equal the fold of its stored events,
    /// a transactionId must belong to one order and be granted at most once, and grants go to the order's account.
    @Test func projectionsEqualTheFoldAndInvariantsHoldUnderRandomConcurrentEvents() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let orders = (0..<12).map { "order-\($0)" }
            let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        var random = SeededRandom(seed: UInt64(writer) &+ 42)
                        var accepted = 0
                        for _ in 0..<150 {
                            let orderId = orders[random.next(below: orders.count)]
                            let event = Self.randomEvent(for: orderId, using: &random)
                            do {
                                _ = try await ledger.record(orderId: orderId, events: [event], metadata: EventMetadata(actor: "w\(writer)"))
                                accepted += 1
                            } catch is Refusal {
                            } catch is EventStoreError {
                            }
                        }
                        return accepted
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(accepted > 50, "the generator should produce plenty of accepted events")

            var grantedTransactions: [String: String] = [:]
            for orderId in orders {
                let stored = try await ledger.store.read(orderId)
                let folded = OrderDecider.fold(try stored.map { try $0.recordedOrderEvent() })
                #expect(try await ledger.order(orderId) == folded, "projection of \(orderId) drifted from its events")
                #expect(stored.map(\.version) == Array(0..<stored.count).map { $0 + 1 })
                for event in stored where event.type == "order.granted" {
                    #expect(event.data["accountId"] == folded.map { .string($0.accountId) })
                    let transactionId = try #require(event.data["transactionId"].flatMap { if case .string(let s) = $0 { s } else { nil } })
                    #expect(grantedTransactions[transactionId] == nil, "\(transactionId) granted twice")
                    grantedTransactions[transactionId] = orderId
                }
            }
            for (transactionId, orderId) in grantedTransactions {
                #expect(try await ledger.transaction(transactionId)?.orderId == orderId)
            }
        }
    }

    static func randomEvent(for orderId: String, using random: inout SeededRandom) -> Submission {
        var lifecycle = Lifecycle()
        lifecycle.accountId = ["acct-a", "acct-b"][random.next(below: 2)]
        lifecycle.transactionId = "tx-\(random.next(below: 6))"
        lifecycle.productId = ["gems.100", "gems.500"][random.next(below: 2)]
        // The order's own account and product are fixed by its number, so grants can match or not.
        let choices: [Submission] = [
            lifecycle.created, lifecycle.queued, lifecycle.receipt, lifecycle.receipt, lifecycle.verified, lifecycle.verified,
            lifecycle.verificationFailed(retryable: true), lifecycle.verificationFailed(retryable: false),
            lifecycle.granted(), lifecycle.granted(), lifecycle.granted(), lifecycle.finished, lifecycle.cancelled, lifecycle.refunded,
        ]
        return choices[random.next(below: choices.count)]
    }
}

/// SplitMix64: a small deterministic generator, so a failing run can be replayed.
struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
