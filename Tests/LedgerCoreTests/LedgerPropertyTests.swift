import Foundation
import LedgerCore
import Testing

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny seeded generator, so every run draws the same sequences and a
/// failure can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The transition table restated as data: from a state (nil = no order), an accepted event of a type may lead
/// to these states. The decider is checked against it step by step.
let expectedTransitions: [OrderState?: [EventType: Set<OrderState>]] = withProviderFacts([
    nil: [.orderCreated: [.created]],
    .created: [.paymentQueued: [.paymentQueued], .receiptReceived: [.receiptReceived], .orderCancelled: [.cancelled]],
    .paymentQueued: [.receiptReceived: [.receiptReceived], .orderCancelled: [.cancelled]],
    .receiptReceived: [
        .receiptReceived: [.receiptReceived], .receiptVerified: [.verified], .verificationFailed: [.verificationFailed, .rejected],
        .orderFinished: [.receiptReceived],
    ],
    .verificationFailed: [
        .receiptReceived: [.receiptReceived], .receiptVerified: [.verified], .verificationFailed: [.verificationFailed, .rejected],
        .orderFinished: [.verificationFailed],
    ],
    .verified: [.receiptReceived: [.verified], .orderGranted: [.granted], .orderFinished: [.verified], .orderRefunded: [.refunded]],
    .granted: [.receiptReceived: [.granted], .orderFinished: [.finished], .orderRefunded: [.refunded]],
    .finished: [.receiptReceived: [.finished], .orderRefunded: [.refunded]],
    .rejected: [.orderFinished: [.rejected]],
    .cancelled: [.receiptReceived: [.receiptReceived], .orderFinished: [.cancelled]],
    .refunded: [.receiptReceived: [.refunded], .orderFinished: [.refunded], .refundReversed: [.verified, .granted, .finished]],
])

/// A provider's fact is accepted in every state of an existing order and leaves the state as it is.
func withProviderFacts(_ table: [OrderState?: [EventType: Set<OrderState>]]) -> [OrderState?: [EventType: Set<OrderState>]] {
    var table = table
    for state in OrderState.allCases { table[state, default: [:]][.providerNotified] = [state] }
    return table
}

/// One or two orders fed random plausible events through decide → evolve, with the transaction bindings a
/// store would keep; it records what it accepted and checks the rules on every step.
struct SimulatedLedger {
    var streams: [String: [RecordedOrderEvent]] = [:]
    var orders: [String: Order] = [:]
    var bindings: [String: TransactionBinding] = [:]
    var grantedBy: [String: [String]] = [:]  // transactionId → orders that granted it
    var visited: Set<OrderState> = []
    var accepted = 0
    var clock = Date(timeIntervalSince1970: 1_800_000_000)

    static let accounts = ["acct-1", "acct-2"]
    static let products = ["gems.100", "gems.500"]
    static let transactions = ["t-1", "t-2", "t-3"]

    /// A plausible next event for `orderId`: mostly one the order's state accepts, with the order's own values,
    /// sometimes anything at all.
    func randomEvent(for orderId: String, using random: inout SplitMix64) -> OrderEvent {
        let order = orders[orderId]
        func pick(_ own: String?, _ pool: [String]) -> String {
            if let own, Int.random(in: 0..<10, using: &random) < 8 { return own }
            return pool.randomElement(using: &random)!
        }
        let likely = OrderDecider.allowedEvents(from: order?.state)
        let type = Int.random(in: 0..<10, using: &random) < 7
            ? likely.randomElement(using: &random)! : EventType.allCases.randomElement(using: &random)!
        let environment: PurchaseEnvironment = Int.random(in: 0..<10, using: &random) == 0 ? .sandbox : .production
        let transaction = pick(order?.transactionId, Self.transactions)
        switch type {
        case .orderCreated:
            return .created(OrderCreated(
                accountId: Self.accounts.randomElement(using: &random)!,
                productId: Self.products.randomElement(using: &random)!,
                amount: Money(value: 499, currency: "USD"), provider: .appStore, environment: environment))
        case .paymentQueued:
            return .paymentQueued(PaymentQueued())
        case .receiptReceived:
            return .receiptReceived(ReceiptReceived(transactionId: transaction))
        case .receiptVerified:
            return .receiptVerified(ReceiptVerified(
                transactionId: transaction, productId: pick(order?.productId, Self.products),
                environment: environment == .sandbox ? .sandbox : order?.environment ?? .production, purchasedAt: clock))
        case .verificationFailed:
            return .verificationFailed(VerificationFailed(code: "21005", retryable: Int.random(in: 0..<4, using: &random) > 0))
        case .orderGranted:
            return .granted(OrderGranted(transactionId: transaction, accountId: pick(order?.accountId, Self.accounts)))
        case .orderFinished:
            return .finished(OrderFinished())
        case .orderCancelled:
            return .cancelled(OrderCancelled(reason: .expired))
        case .orderRefunded:
            return .refunded(OrderRefunded(transactionId: transaction))
        case .refundReversed:
            return .refundReversed(RefundReversed(transactionId: transaction))
        case .providerNotified:
            return .providerNotified(ProviderNotified(
                provider: .appStore, notificationId: UUID().uuidString, notificationType: "REFUND", effect: .refund,
                signedAt: clock, transactionId: transaction, evidence: [:]))
        }
    }

    mutating func offer(_ event: OrderEvent, to orderId: String) {
        clock.addTimeInterval(1)
        let before = orders[orderId]
        let binding = event.transactionId.flatMap { bindings[$0] }
        let refusal = OrderDecider.decide(before, event, orderId: orderId, binding: binding)
        let recorded = RecordedOrderEvent(orderId: orderId, version: (before?.version ?? 0) + 1, event: event, recordedAt: clock)
        // evolve is total: it folds even what decide refused, without trapping.
        let evolved = OrderDecider.evolve(before, recorded)
        guard refusal == nil else { return }

        guard let after = evolved else {
            Issue.record("an accepted \(event.type.rawValue) left no order")
            return
        }
        let allowedNext = expectedTransitions[before?.state]?[event.type] ?? []
        #expect(allowedNext.contains(after.state), "\(before?.state.rawValue ?? "nil") --\(event.type.rawValue)--> \(after.state.rawValue)")
        #expect(after.version == recorded.version && after.updatedAt == clock)
        if let bound = before?.transactionId { #expect(after.transactionId == bound, "a bound transaction never changes") }
        if case .granted(let grant) = event {
            #expect(grant.accountId == after.accountId, "a grant goes to the order's account")
            grantedBy[grant.transactionId, default: []].append(orderId)
        }
        #expect(Set(after.flags).count == after.flags.count)
        #expect((after.state == .refunded) == (after.refundedAt != nil))
        if after.grantedAt != nil { #expect([.granted, .finished, .refunded].contains(after.state)) }

        streams[orderId, default: []].append(recorded)
        orders[orderId] = after
        visited.insert(after.state)
        accepted += 1
        if let transactionId = after.transactionId {
            bindings[transactionId] = TransactionBinding(
                transactionId: transactionId, orderId: orderId, granted: after.grantedAt != nil)
        }
    }

    func checkStreams() {
        for (orderId, stream) in streams {
            #expect(OrderDecider.fold(stream) == orders[orderId], "the projection is the fold of the stream")
            #expect(stream.map(\.version) == Array(1...stream.count), "versions are contiguous")
        }
        for (transactionId, grants) in grantedBy {
            #expect(grants.count == 1, "\(transactionId) granted by \(grants)")
        }
        let bound = orders.values.compactMap(\.transactionId)
        #expect(Set(bound).count == bound.count, "a transaction belongs to one order")
    }
}

@Suite("Random event sequences keep the ledger's invariants")
struct LedgerPropertyTests {
    @Test func theRestatedTableMatchesAllowedEvents() {
        for state in [nil] + OrderState.allCases.map(Optional.some) {
            // allowedEvents lists what a client may post: provider.notified is the ledger's own.
            let restated = Set(expectedTransitions[state]?.keys.map { $0 } ?? []).subtracting([.providerNotified])
            #expect(restated == Set(OrderDecider.allowedEvents(from: state)))
        }
    }

    @Test func randomSequencesKeepEveryInvariant() {
        var random = SplitMix64(state: 0x5EED_0F_1ED6E5)
        var visited: Set<OrderState> = []
        var accepted = 0
        for _ in 0..<2_500 {
            var ledger = SimulatedLedger()
            let orderIds = Bool.random(using: &random) ? ["order-a"] : ["order-a", "order-b"]
            for _ in 0..<Int.random(in: 1...40, using: &random) {
                let orderId = orderIds.randomElement(using: &random)!
                ledger.offer(ledger.randomEvent(for: orderId, using: &random), to: orderId)
            }
            ledger.checkStreams()
            visited.formUnion(ledger.visited)
            accepted += ledger.accepted
        }
        #expect(visited == Set(OrderState.allCases), "the sequences reach every state")
        #expect(accepted > 20_000)
    }
}
