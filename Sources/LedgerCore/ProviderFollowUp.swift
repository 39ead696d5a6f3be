import Foundation

/// What the provider's facts about an order lead to: the ordinary events that bring the order in line with what
/// the provider signed. Pure. Computed from all the order's provider facts each time one arrives, not from the
/// newest alone, so the order ends in the same state whatever order the provider delivered them in (a refund
/// that arrives before the payment it refunds is applied once the payment is).
///
/// - A **payment** of the order's own provider, for the order's amount (when the provider states one): an order
///   without a transaction records `receipt.received` (source `notification`); an order waiting for verification
///   records `receipt.verified` with what the provider signed (so the order's rules judge its product, environment
///   and `appAccountToken`). An amount that differs, or a price not in whole minor units, is never applied (the
///   outcome's refusal says `amount_mismatch`, when no payment for the order's amount is there; finance sees it too).
/// - A **refund** (the latest of the refunds and reversals, by the provider's signing time, is a refund): a verified,
///   granted or finished order records `order.refunded`. A **reversal** after it: `order.refund_reversed`.
/// - **Closed** unpaid (no payment fact): an order not yet paid records `order.cancelled` (`expired`).
/// Each event is checked with `OrderDecider.decide` against the order as the previous ones leave it; the first
/// refused one ends the list, and its refusal is returned.
public enum ProviderFollowUp {
    public struct Outcome: Sendable, Hashable {
        public var events: [OrderEvent]
        /// Why the list stopped short of what the facts ask for, if it did.
        public var refusal: Refusal?
    }

    public static func events(for order: Order, facts: [ProviderNotified]) -> Outcome {
        var order = order
        var events: [OrderEvent] = []
        var refusal: Refusal?
        /// Records `event` if the rules accept it now; false (and the refusal kept) otherwise.
        func follow(_ event: OrderEvent) -> Bool {
            if let refused = OrderDecider.decide(order, event, orderId: order.orderId, binding: nil) {
                refusal = refused
                return false
            }
            let recorded = RecordedOrderEvent(
                orderId: order.orderId, version: order.version + 1, event: event, recordedAt: order.updatedAt)
            order = OrderDecider.evolve(order, recorded) ?? order
            events.append(event)
            return true
        }

        let payments = facts.filter { $0.effect == .payment && $0.transactionId != nil && $0.provider == order.provider }
        let payment = payments.last { $0.amountRefusal(for: order) == nil }
        if payment == nil, let unpaid = payments.last?.amountRefusal(for: order) { refusal = unpaid }
        if let payment, let transactionId = payment.transactionId {
            if order.transactionId == nil {
                guard follow(.receiptReceived(ReceiptReceived(
                    transactionId: transactionId, originalTransactionId: payment.originalTransactionId,
                    source: .notification)))
                else { return Outcome(events: events, refusal: refusal) }
            }
            if order.state == .receiptReceived || order.state == .verificationFailed {
                guard follow(.receiptVerified(ReceiptVerified(
                    transactionId: transactionId, productId: payment.productId ?? order.productId,
                    quantity: order.quantity, environment: payment.environment ?? order.environment,
                    purchasedAt: payment.purchasedAt ?? payment.signedAt, price: payment.amount,
                    unconvertedPrice: payment.unconvertedPrice, appAccountToken: payment.appAccountToken)))
                else { return Outcome(events: events, refusal: refusal) }
            }
        } else if facts.contains(where: { $0.effect == .closed }), [.created, .paymentQueued].contains(order.state) {
            _ = follow(.cancelled(OrderCancelled(reason: .expired)))
            return Outcome(events: events, refusal: refusal)
        }

        // The refund standing now: the latest refund or reversal the provider signed (later in the stream on a tie).
        let refundFacts = facts.filter { $0.effect == .refund || $0.effect == .refundReversed }
        guard let latest = refundFacts.enumerated().max(by: { ($0.element.signedAt, $0.offset) < ($1.element.signedAt, $1.offset) })?.element,
              let transactionId = order.transactionId
        else { return Outcome(events: events, refusal: refusal) }
        if latest.effect == .refund, [.verified, .granted, .finished].contains(order.state) {
            let reason = [latest.notificationType, latest.revocationReason].compactMap { $0 }.joined(separator: ":")
            _ = follow(.refunded(OrderRefunded(
                transactionId: transactionId, amount: latest.amount, reason: "\(latest.provider.rawValue): \(reason)",
                refundedAt: latest.signedAt)))
        } else if latest.effect == .refundReversed, order.state == .refunded {
            _ = follow(.refundReversed(RefundReversed(transactionId: transactionId)))
        }
        return Outcome(events: events, refusal: refusal)
    }
}

extension ProviderNotified {
    /// Why this payment is not for exactly `order`'s amount (value and currency), if it is not: a price not in whole
    /// minor units never is. Only a payment that states no price at all (neither `amount` nor `unconvertedPrice`) is
    /// not compared: "no price" is what the provider said, never what the ledger could not read.
    func amountRefusal(for order: Order) -> Refusal? {
        if let unconvertedPrice { return .priceNotInMinorUnits(expected: order.amount, actual: unconvertedPrice) }
        if let amount, amount != order.amount { return .amountMismatch(expected: order.amount, actual: amount) }
        return nil
    }
}
