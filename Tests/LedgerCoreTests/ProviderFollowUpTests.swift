import Foundation
import LedgerCore
import Testing

/// What a provider's facts lead to (docs/providers.md, "What each notification does"), whatever order they came in.
@Suite("A provider's facts bring the order in line with what it signed")
struct ProviderFollowUpTests {
    /// Records each fact as the ledger does: the fact, then its follow-up, folded; returns the final order.
    static func deliver(_ facts: [OrderEvent], after history: [OrderEvent]) -> (order: Order, events: [[EventType]]) {
        var events = history
        var followed: [[EventType]] = []
        for fact in facts {
            guard case .providerNotified = fact, let order = OrderDecider.fold(Sample.recorded(events)) else {
                Issue.record("not a fact, or no order")
                break
            }
            events.append(fact)
            let known = events.compactMap { event -> ProviderNotified? in
                if case .providerNotified(let notice) = event { return notice } else { return nil }
            }
            let outcome = ProviderFollowUp.events(for: order, facts: known)
            followed.append(outcome.events.map(\.type))
            events += outcome.events
        }
        guard let order = OrderDecider.fold(Sample.recorded(events)) else { preconditionFailure("the sample order exists") }
        return (order, followed)
    }

    @Test func aPaymentTheClientNeverReportedVerifiesTheOrder() {
        let (order, followed) = Self.deliver([Sample.providerFact(.payment)], after: Sample.history(to: .paymentQueued))
        #expect(followed == [[.receiptReceived, .receiptVerified]])
        #expect(order.state == .verified)
        #expect(order.transactionId == Sample.transactionId)
    }

    @Test func onAnOrderWaitingForVerificationThePaymentIsTheVerification() {
        let (order, followed) = Self.deliver([Sample.providerFact(.payment)], after: Sample.history(to: .receiptReceived))
        #expect(followed == [[.receiptVerified]])
        #expect(order.state == .verified)
    }

    @Test func aPaymentAfterCancellingIsALateReceipt() {
        let (order, _) = Self.deliver([Sample.providerFact(.payment)], after: Sample.history(to: .cancelled))
        #expect(order.state == .verified)
        #expect(order.flags == [.lateReceipt])
    }

    @Test func anotherAmountIsNotApplied() {
        let wrong = Money(value: 1, currency: "USD")
        let (order, followed) = Self.deliver([Sample.providerFact(.payment, amount: wrong)], after: Sample.history(to: .paymentQueued))
        #expect(followed == [[]])
        #expect(order.state == .paymentQueued)
    }

    /// A price the provider stated that is not in whole minor units is not "no price": it is compared, and refused.
    @Test func aPriceNotInMinorUnitsIsNotAppliedAndTheOutcomeSaysWhy() throws {
        let order = try #require(OrderDecider.fold(Sample.recorded(Sample.history(to: .paymentQueued))))
        guard case .providerNotified(var payment) = Sample.providerFact(.payment, amount: nil) else { return }
        let stated = UnconvertedPrice(milliunits: 4991, quantity: 1, currency: "USD")
        payment.unconvertedPrice = stated
        let outcome = ProviderFollowUp.events(for: order, facts: [payment])
        #expect(outcome.events.isEmpty)
        #expect(outcome.refusal == .priceNotInMinorUnits(expected: Sample.amount, actual: stated))
        // Only a payment that states no price at all is not compared.
        payment.unconvertedPrice = nil
        #expect(ProviderFollowUp.events(for: order, facts: [payment]).events.map(\.type) == [.receiptReceived, .receiptVerified])
    }

    @Test func aRefundAfterTheGrantRefundsAndItsReversalRestores() {
        let later = Sample.start.addingTimeInterval(3600)
        let (order, followed) = Self.deliver(
            [Sample.providerFact(.refund, signedAt: Sample.start), Sample.providerFact(.refundReversed, signedAt: later)],
            after: Sample.history(to: .granted))
        #expect(followed == [[.orderRefunded], [.refundReversed]])
        #expect(order.state == .granted)
        #expect(order.refundedAt == nil && order.refundedAmount == nil)
    }

    /// The same three facts in every order of delivery end in the same state: a refund that arrives before the
    /// payment waits for it; a reversal signed before a refund does not undo it.
    @Test func outOfOrderDeliveryEndsInTheSameState() {
        let payment = Sample.providerFact(.payment, signedAt: Sample.start)
        let refund = Sample.providerFact(.refund, signedAt: Sample.start.addingTimeInterval(60))
        let permutations: [[OrderEvent]] = [[payment, refund], [refund, payment]]
        let ends = permutations.map { Self.deliver($0, after: Sample.history(to: .paymentQueued)).order.state }
        #expect(ends == [.refunded, .refunded])

        let reversal = Sample.providerFact(.refundReversed, signedAt: Sample.start.addingTimeInterval(120))
        let all: [[OrderEvent]] = [
            [payment, refund, reversal], [payment, reversal, refund], [refund, payment, reversal],
            [refund, reversal, payment], [reversal, payment, refund], [reversal, refund, payment],
        ]
        let states = all.map { Self.deliver($0, after: Sample.history(to: .paymentQueued)).order.state }
        #expect(states == Array(repeating: .verified, count: all.count))
    }

    @Test func aClosedTradeCancelsOnlyAnUnpaidOrder() {
        #expect(Self.deliver([Sample.providerFact(.closed)], after: Sample.history(to: .created)).order.state == .cancelled)
        #expect(Self.deliver([Sample.providerFact(.closed)], after: Sample.history(to: .granted)).order.state == .granted)
    }

    @Test func factsAreAcceptedInEveryStateAndChangeNothingThemselves() {
        for state in OrderState.allCases {
            let outcome = record(Sample.providerFact(.none), after: Sample.history(to: state))
            #expect(outcome.refusal == nil)
            #expect(outcome.state == state)
        }
    }

    @Test func aTransactionOtherThanTheOrdersStopsTheFollowUpWithTheRefusal() {
        let order = OrderDecider.fold(Sample.recorded(Sample.history(to: .receiptReceived)))!
        guard case .providerNotified(let other) = Sample.providerFact(.payment, transactionId: "other-tx") else { return }
        let outcome = ProviderFollowUp.events(for: order, facts: [other])
        #expect(outcome.events.isEmpty)
        #expect(outcome.refusal?.code == "transaction_mismatch")
    }

    /// Apple's payment of the order's transaction, bought for another order's token: it does not verify this one.
    @Test func aPaymentForAnotherOrdersAppAccountTokenDoesNotVerifyTheOrder() throws {
        let order = try #require(OrderDecider.fold(Sample.recorded(Sample.history(to: .receiptReceived))))
        guard case .providerNotified(var payment) = Sample.providerFact(.payment) else { return }
        payment.appAccountToken = AppAccountToken.forOrderId("order-2")
        let outcome = ProviderFollowUp.events(for: order, facts: [payment])
        #expect(outcome.events.isEmpty)
        #expect(outcome.refusal == .appAccountTokenMismatch(
            expected: AppAccountToken.forOrderId(Sample.orderId), actual: AppAccountToken.forOrderId("order-2")))
        payment.appAccountToken = AppAccountToken.forOrderId(Sample.orderId)
        #expect(ProviderFollowUp.events(for: order, facts: [payment]).events.map(\.type) == [.receiptVerified])
    }

    @Test func theAppAccountTokenOfAnAppStoreOrderDefaultsToTheOneDerivedFromItsId() {
        let order = OrderDecider.fold(Sample.recorded([Sample.created]))
        #expect(order?.appAccountToken == AppAccountToken.forOrderId(Sample.orderId))
        #expect(AppAccountToken.forOrderId("order-1").uuidString.lowercased() == "ac611565-7e47-5acf-a5d1-e8541cf37759")
    }
}
