import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("Ledger: random histories keep every invariant")
struct LedgerPropertyTests {
    /// Many concurrent writers post random events and batches (valid or not, in any order) to a few orders sharing a
    /// few transactionIds. For every interleaving: exactly the accepted events are stored, each stream is gapless,
    /// each stored projection equals the fold of its events, a transactionId belongs to one order and is granted at
    /// most once, grants go to the order's account — and `ledger verify` (every hash chain, every projection) passes.
    @Test func projectionsEqualTheFoldAndInvariantsHoldUnderRandomConcurrentEvents() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let orders = (0..<6).map { "order-\($0)" }
            let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<16 {
                    group.addTask {
                        var random = SeededRandom(seed: seed &+ UInt64(writer))
                        var accepted = 0
                        for _ in 0..<40 {
                            let orderId = orders[random.next(below: orders.count)]
                            let batch = (0...random.next(below: 3)).map { _ in Self.randomEvent(for: orderId, using: &random) }
                            do {
                                let recorded = try await ledger.record(orderId: orderId, events: batch, metadata: EventMetadata(actor: "w\(writer)"))
                                accepted += recorded.append.events.count
                            } catch is Refusal {
                            } catch is EventStoreError {
                            }
                        }
                        return accepted
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(try await ledger.store.count("events") == accepted, "seed \(seed): exactly the accepted events are stored")

            var grantedTransactions: [String: String] = [:]
            for orderId in orders {
                let stored = try await ledger.store.read(.order(orderId))
                let folded = OrderDecider.fold(try stored.map { try $0.recordedOrderEvent() })
                #expect(try await ledger.order(orderId) == folded, "seed \(seed): projection of \(orderId) drifted from its events")
                #expect(stored.map(\.version) == Array(0..<stored.count).map { $0 + 1 }, "seed \(seed)")
                for event in stored where event.type == "order.granted" {
                    #expect(event.data["accountId"] == folded.map { .string($0.accountId) }, "seed \(seed)")
                    let transactionId = try #require(event.data["transactionId"].flatMap { if case .string(let s) = $0 { s } else { nil } })
                    #expect(grantedTransactions[transactionId] == nil, "seed \(seed): \(transactionId) granted twice")
                    grantedTransactions[transactionId] = orderId
                }
            }
            for (transactionId, orderId) in grantedTransactions {
                #expect(try await ledger.transaction(transactionId)?.orderId == orderId, "seed \(seed)")
            }
            let report = try await LedgerDatabase(client: client).operations.verify()
            #expect(report.passed, "seed \(seed): verify found \(report.brokenEvents.prefix(3)) \(report.drift.prefix(3))")
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

