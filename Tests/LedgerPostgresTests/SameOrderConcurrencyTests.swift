import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// Many writers on ONE order at once — StoreKit re-delivering a transaction while the client retries — must leave
/// one gapless stream whose hash chain holds, so that `ledger verify` passes and the sealer keeps sealing.
@Suite("Store: concurrent appends to one order keep the hash chain")
struct SameOrderConcurrencyTests {
    static let writers = 48

    @Test func concurrentSinglesAndBatchesOnOneOrderChainAndSeal() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            _ = try await ledger.record(orderId: "order-1", events: [lifecycle.created], metadata: EventMetadata(actor: "test"))
            // Even writers post one re-delivered receipt; odd writers a batch of a receipt and a retryable failure.
            // Every interleaving is accepted by the rules, so every append must succeed — and chain.
            let outcomes = await withTaskGroup(of: Result<Recorded, any Error>.self) { group in
                for writer in 0..<Self.writers {
                    group.addTask {
                        let events = writer.isMultiple(of: 2)
                            ? [lifecycle.receipt] : [lifecycle.receipt, lifecycle.verificationFailed(retryable: true)]
                        return await attempt {
                            try await ledger.record(orderId: "order-1", events: events, metadata: EventMetadata(actor: "w\(writer)"))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let failures = outcomes.compactMap { if case .failure(let error) = $0 { error } else { nil } }
            #expect(failures.isEmpty, "\(failures.prefix(3))")

            let expected = 1 + Self.writers / 2 + Self.writers / 2 * 2
            let stored = try await ledger.store.read(.order("order-1"))
            #expect(stored.map(\.version) == Array(1...expected), "versions are gapless")

            let report = try await LedgerDatabase(client: client).operations.verify()
            #expect(report.brokenEvents.isEmpty, "\(report.brokenEvents.prefix(3))")
            #expect(report.passed)
            let sealed = try await sealUntil(Int64(expected), client)
            #expect(sealed?.eventCount == Int64(expected), "the sealer seals every event")
        }
    }
}
