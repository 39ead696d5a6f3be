import Foundation

extension OrderDecider {
    /// Applies an accepted event to the order. Pure and total: it never traps, even on a sequence `decide`
    /// would refuse — then the state is left as is, but `version` and `updatedAt` still advance, so the
    /// projection always matches the stream. nil only when there is no order and the event is not order.created.
    /// `order` is consumed: a fold that moves its order in (`current.take()`) has it changed in place, not copied.
    public static func evolve(_ order: consuming Order?, _ recorded: RecordedOrderEvent) -> Order? {
        let at = recorded.recordedAt
        guard var order else {
            guard case .created(let created) = recorded.event else { return nil }
            return Order(
                orderId: recorded.orderId, accountId: created.accountId, productId: created.productId,
                quantity: created.quantity, amount: created.amount, provider: created.provider,
                environment: created.environment,
                appAccountToken: created.appAccountToken
                    ?? (created.provider == .appStore ? AppAccountToken.forOrderId(recorded.orderId) : nil),
                state: .created,
                version: recorded.version, transactionId: nil, flags: [], verificationAttempts: 0, lastErrorCode: nil,
                refundedAmount: nil, createdAt: at, updatedAt: at, grantedAt: nil, finishedAt: nil, refundedAt: nil)
        }
        order.version = recorded.version
        order.updatedAt = at

        switch (order.state, recorded.event) {
        case (.created, .paymentQueued(let queued)):
            order.state = .paymentQueued
            // The token StoreKit will carry, if the app chose one only now.
            order.appAccountToken = queued.appAccountToken ?? order.appAccountToken

        case (.created, .receiptReceived(let receipt)), (.paymentQueued, .receiptReceived(let receipt)),
             (.verificationFailed, .receiptReceived(let receipt)):
            order.state = .receiptReceived
            order.transactionId = receipt.transactionId
        case (.cancelled, .receiptReceived(let receipt)):
            order.state = .receiptReceived
            order.transactionId = receipt.transactionId
            order.raise(.lateReceipt)
        case (.receiptReceived, .receiptReceived), (.verified, .receiptReceived), (.granted, .receiptReceived),
             (.finished, .receiptReceived), (.refunded, .receiptReceived):
            break  // a resubmission: recorded, nothing changes

        case (.receiptReceived, .receiptVerified), (.verificationFailed, .receiptVerified):
            order.state = .verified

        case (.receiptReceived, .verificationFailed(let failure)), (.verificationFailed, .verificationFailed(let failure)):
            order.state = failure.retryable ? .verificationFailed : .rejected
            order.verificationAttempts += 1
            order.lastErrorCode = failure.code

        case (.verified, .granted):
            order.state = .granted
            order.grantedAt = at

        case (.granted, .finished):
            order.state = .finished
            order.finishedAt = at
        case (.rejected, .finished), (.cancelled, .finished), (.refunded, .finished):
            if order.finishedAt == nil { order.finishedAt = at }
        case (.receiptReceived, .finished), (.verificationFailed, .finished), (.verified, .finished):
            if order.finishedAt == nil {
                order.finishedAt = at
                order.raise(.finishedBeforeGrant)
            }

        case (.created, .cancelled), (.paymentQueued, .cancelled):
            order.state = .cancelled

        case (.granted, .refunded(let refund)), (.finished, .refunded(let refund)):
            order.refund(refund, at: at)
        case (.verified, .refunded(let refund)):
            order.refund(refund, at: at)
            order.raise(.refundedBeforeGrant)

        case (.refunded, .refundReversed):
            order.reverseRefund()

        default:
            break  // not a row of the table (a provider fact included): only version and updatedAt move
        }
        return order
    }

    /// The order its events fold to: `events.reduce(nil, evolve)`.
    public static func fold(_ events: [RecordedOrderEvent]) -> Order? {
        events.reduce(nil) { order, recorded in evolve(order, recorded) }
    }
}

extension Order {
    fileprivate mutating func refund(_ refund: OrderRefunded, at time: Date) {
        state = .refunded
        refundedAt = time
        refundedAmount = refund.amount ?? amount
    }

    /// Back to where the refund found the order: not granted → verified; granted → granted, or finished when the
    /// finish came after the grant. The refund's flags stay: they record what happened.
    fileprivate mutating func reverseRefund() {
        if let grantedAt {
            state = finishedAt.map { $0 >= grantedAt } == true ? .finished : .granted
        } else {
            state = .verified
        }
        refundedAt = nil
        refundedAmount = nil
    }
}
