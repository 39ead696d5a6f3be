import Foundation
import LedgerCore

/// The order every decider test starts from, and the events of its life, with the happy path's values.
enum Sample {
    static let orderId = "order-1"
    static let accountId = "acct-1"
    static let productId = "gems.100"
    static let transactionId = "2000000123"
    static let amount = Money(value: 499, currency: "USD")
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static let created = OrderEvent.created(
        OrderCreated(accountId: accountId, productId: productId, amount: amount, provider: .appStore))
    static let queued = OrderEvent.paymentQueued(PaymentQueued(applicationUsername: accountId))
    static func receipt(_ transactionId: String = transactionId) -> OrderEvent {
        .receiptReceived(ReceiptReceived(transactionId: transactionId))
    }
    static func verified(
        _ transactionId: String = transactionId, product: String = productId, environment: PurchaseEnvironment = .production
    ) -> OrderEvent {
        .receiptVerified(ReceiptVerified(
            transactionId: transactionId, productId: product, environment: environment, purchasedAt: start))
    }
    static func failed(retryable: Bool, code: String = "21005") -> OrderEvent {
        .verificationFailed(VerificationFailed(code: code, retryable: retryable))
    }
    static func granted(_ transactionId: String = transactionId, to account: String = accountId) -> OrderEvent {
        .granted(OrderGranted(transactionId: transactionId, accountId: account))
    }
    static let finished = OrderEvent.finished(OrderFinished())
    static let cancelled = OrderEvent.cancelled(OrderCancelled(reason: .userCancelled))
    static func refunded(_ transactionId: String = transactionId, amount: Money? = nil) -> OrderEvent {
        .refunded(OrderRefunded(transactionId: transactionId, amount: amount))
    }

    /// A provider's verified message about the sample order's transaction (App Store, the order's amount).
    static func providerFact(
        _ effect: ProviderEffect, id: String = UUID().uuidString, signedAt: Date = start, amount: Money? = amount,
        transactionId: String = transactionId
    ) -> OrderEvent {
        .providerNotified(ProviderNotified(
            provider: .appStore, notificationId: id, notificationType: effect.rawValue.uppercased(), effect: effect,
            signedAt: signedAt, transactionId: transactionId, productId: productId, amount: amount,
            environment: .production, evidence: ["signedPayload": "header.payload.signature"]))
    }

    /// The shortest history that leaves the order in `state`.
    static func history(to state: OrderState) -> [OrderEvent] {
        switch state {
        case .created: [created]
        case .paymentQueued: [created, queued]
        case .receiptReceived: [created, queued, receipt()]
        case .verificationFailed: history(to: .receiptReceived) + [failed(retryable: true)]
        case .rejected: history(to: .receiptReceived) + [failed(retryable: false)]
        case .verified: history(to: .receiptReceived) + [verified()]
        case .granted: history(to: .verified) + [granted()]
        case .finished: history(to: .granted) + [finished]
        case .refunded: history(to: .granted) + [refunded()]
        case .cancelled: [created, cancelled]
        }
    }

    /// `events` as stored for `orderId`: versions 1…n, recorded a minute apart from `start`.
    static func recorded(_ events: [OrderEvent], orderId: String = orderId) -> [RecordedOrderEvent] {
        events.enumerated().map { index, event in
            RecordedOrderEvent(orderId: orderId, version: index + 1, event: event, recordedAt: time(index + 1))
        }
    }

    /// The time the `version`-th event of a `recorded` history is recorded at.
    static func time(_ version: Int) -> Date { start.addingTimeInterval(Double(version) * 60) }
}

/// What happened when an event was offered to an order: refused, or accepted and folded in.
struct Outcome {
    var refusal: Refusal?
    var order: Order?

    var state: OrderState? { order?.state }
}

/// Offers `event` to the order `history` folds to, as the store does: decide, and evolve if accepted.
func record(_ event: OrderEvent, after history: [OrderEvent], binding: TransactionBinding? = nil) -> Outcome {
    let before = OrderDecider.fold(Sample.recorded(history))
    if let refusal = OrderDecider.decide(before, event, orderId: Sample.orderId, binding: binding) {
        return Outcome(refusal: refusal, order: nil)
    }
    let next = RecordedOrderEvent(
        orderId: Sample.orderId, version: history.count + 1, event: event, recordedAt: Sample.time(history.count + 1))
    return Outcome(refusal: nil, order: OrderDecider.evolve(before, next))
}

/// Offers `event` to an order in `state` (reached by its shortest history).
func record(_ event: OrderEvent, in state: OrderState, binding: TransactionBinding? = nil) -> Outcome {
    record(event, after: Sample.history(to: state), binding: binding)
}

extension OrderState {
    /// Every state but these.
    static func all(except excluded: OrderState...) -> [OrderState] {
        allCases.filter { !excluded.contains($0) }
    }
}
