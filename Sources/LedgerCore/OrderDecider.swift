/// The order's rules as pure functions: which events an order accepts (`decide`, `allowedEvents`, here) and what
/// an accepted event does to it (`evolve`, `fold`, in OrderEvolve.swift). No I/O: the store brings the order and
/// the transaction binding, and records what is accepted.
public enum OrderDecider {
    /// nil = accepted. Pure and total. `binding` is what the ledger knows about `event.transactionId` (nil if
    /// unknown, or if the event names none). The cases below are the transition table, row by row; any
    /// (state, event) pair they do not list is an invalid transition.
    public static func decide(_ order: Order?, _ event: OrderEvent, orderId: String, binding: TransactionBinding?) -> Refusal? {
        guard let order else {
            if case .created = event { return nil }
            return .invalidTransition(state: nil, event: event.type, allowed: allowedEvents(from: nil))
        }
        switch (order.state, event, binding) {
        // provider.notified — a verified provider fact: recorded in every state, never refused.
        case (_, .providerNotified, _):
            return nil

        // order.created — once per order.
        case (_, .created, _):
            return .orderExists(orderId: orderId)

        // payment.queued
        case (.created, .paymentQueued, _):
            return nil

        // receipt.received — a transaction belongs to one order, and an order to one transaction.
        case (_, .receiptReceived(let receipt), let known?) where known.orderId != orderId:
            return .transactionBoundElsewhere(transactionId: receipt.transactionId, orderId: known.orderId)
        case (.created, .receiptReceived(let receipt), _), (.paymentQueued, .receiptReceived(let receipt), _),
             (.verificationFailed, .receiptReceived(let receipt), _), (.cancelled, .receiptReceived(let receipt), _):
            return order.transactionId == nil ? nil : sameTransaction(order, receipt.transactionId)
        // A resubmission: StoreKit re-delivers a transaction until it is finished. Recorded; the state stays.
        case (.receiptReceived, .receiptReceived(let receipt), _), (.verified, .receiptReceived(let receipt), _),
             (.granted, .receiptReceived(let receipt), _), (.finished, .receiptReceived(let receipt), _),
             (.refunded, .receiptReceived(let receipt), _):
            return sameTransaction(order, receipt.transactionId)

        // receipt.verified — the provider must confirm what the order expects.
        case (.receiptReceived, .receiptVerified(let verified), _), (.verificationFailed, .receiptVerified(let verified), _):
            return sameTransaction(order, verified.transactionId) ?? sameProductAndEnvironment(order, verified)
                ?? sameAppAccountToken(order, verified) ?? sameAmount(order, verified)

        // verification.failed — retryable or not, evolve decides where it leads.
        case (.receiptReceived, .verificationFailed, _), (.verificationFailed, .verificationFailed, _):
            return nil

        // order.granted — once per transaction across all orders (checked first: the "credited twice?" answer),
        // and only to the order's own account.
        case (_, .granted(let grant), let known?) where known.granted:
            return .alreadyGranted(transactionId: grant.transactionId, orderId: known.orderId)
        case (.verified, .granted(let grant), _):
            return sameTransaction(order, grant.transactionId) ?? sameAccount(order, grant.accountId)

        // order.finished — after the grant always; otherwise once, to record that the provider will not
        // re-deliver (before a grant that is the "finished too early" lost order).
        case (.granted, .finished, _):
            return nil
        case (.rejected, .finished, _), (.cancelled, .finished, _), (.refunded, .finished, _),
             (.receiptReceived, .finished, _), (.verificationFailed, .finished, _), (.verified, .finished, _):
            return order.finishedAt == nil ? nil : invalidTransition(order, event)

        // order.cancelled — only before any receipt.
        case (.created, .cancelled, _), (.paymentQueued, .cancelled, _):
            return nil

        // order.refunded — of the order's own transaction, after verification.
        case (.granted, .refunded(let refund), _), (.finished, .refunded(let refund), _),
             (.verified, .refunded(let refund), _):
            return sameTransaction(order, refund.transactionId) ?? withinPayment(order, refund)

        // order.refund_reversed — the provider took its refund back.
        case (.refunded, .refundReversed(let reversal), _):
            return sameTransaction(order, reversal.transactionId)

        default:
            return invalidTransition(order, event)
        }
    }

    /// The event types some row of the table accepts from `state` (nil = no order yet), in `EventType.allCases`
    /// order. Whether a given event is accepted can still depend on its data and on the binding.
    public static func allowedEvents(from state: OrderState?) -> [EventType] {
        let allowed: Set<EventType> = switch state {
        case nil: [.orderCreated]
        case .created: [.paymentQueued, .receiptReceived, .orderCancelled]
        case .paymentQueued: [.receiptReceived, .orderCancelled]
        case .receiptReceived: [.receiptReceived, .receiptVerified, .verificationFailed, .orderFinished]
        case .verificationFailed: [.receiptReceived, .receiptVerified, .verificationFailed, .orderFinished]
        case .verified: [.receiptReceived, .orderGranted, .orderFinished, .orderRefunded]
        case .granted: [.receiptReceived, .orderFinished, .orderRefunded]
        case .finished: [.receiptReceived, .orderRefunded]
        case .rejected: [.orderFinished]
        case .cancelled: [.receiptReceived, .orderFinished]
        case .refunded: [.receiptReceived, .orderFinished, .refundReversed]
        }
        return EventType.allCases.filter(allowed.contains)
    }

    // MARK: The checks the table's rows share

    /// The refusal for a pair the table does not have. `allowed` leaves out `order.finished` once the order
    /// has recorded a finish (only a granted order accepts a second one).
    private static func invalidTransition(_ order: Order, _ event: OrderEvent) -> Refusal {
        let allowed = allowedEvents(from: order.state).filter { type in
            type != .orderFinished || order.finishedAt == nil || order.state == .granted
        }
        return .invalidTransition(state: order.state, event: event.type, allowed: allowed)
    }

    private static func sameTransaction(_ order: Order, _ transactionId: String) -> Refusal? {
        order.transactionId == transactionId ? nil : .transactionMismatch(expected: order.transactionId, actual: transactionId)
    }

    private static func sameProductAndEnvironment(_ order: Order, _ verified: ReceiptVerified) -> Refusal? {
        if verified.productId != order.productId {
            return .productMismatch(expected: order.productId, actual: verified.productId)
        }
        if verified.environment != order.environment {
            return .environmentMismatch(expected: order.environment, actual: verified.environment)
        }
        return nil
    }

    /// A purchase the provider signed for another `appAccountToken` was bought for another order (or account): it
    /// does not verify this one, whichever transaction id it shares. Judged only when both name a token: a transaction
    /// bought without one, or an order that has none (not an App Store order), has nothing to compare.
    private static func sameAppAccountToken(_ order: Order, _ verified: ReceiptVerified) -> Refusal? {
        guard let signed = verified.appAccountToken, let expected = order.appAccountToken, signed != expected else { return nil }
        return .appAccountTokenMismatch(expected: expected, actual: signed)
    }

    /// What the provider says was paid is the order's amount, currency included. A price not in whole minor units
    /// never is. Only a verification that states no price at all (`price` and `unconvertedPrice` absent: a provider,
    /// or a transaction, that says none) skips the comparison.
    private static func sameAmount(_ order: Order, _ verified: ReceiptVerified) -> Refusal? {
        if let stated = verified.unconvertedPrice { return .priceNotInMinorUnits(expected: order.amount, actual: stated) }
        if let price = verified.price, price != order.amount { return .amountMismatch(expected: order.amount, actual: price) }
        return nil
    }

    /// A refund is at most what was paid, in the order's currency (absent: the whole amount). One refund stands at a
    /// time (a second needs a reversal first), so no sum of refunds can pass the amount either.
    private static func withinPayment(_ order: Order, _ refund: OrderRefunded) -> Refusal? {
        guard let amount = refund.amount else { return nil }
        guard amount.currency == order.amount.currency, amount.value <= order.amount.value else {
            return .refundExceedsPayment(paid: order.amount, refund: amount)
        }
        return nil
    }

    private static func sameAccount(_ order: Order, _ accountId: String) -> Refusal? {
        order.accountId == accountId ? nil : .accountMismatch(expected: order.accountId, actual: accountId)
    }
}
