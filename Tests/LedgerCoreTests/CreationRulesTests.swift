import Foundation
import LedgerCore
import Testing

@Suite("order.created, payment.queued, order.cancelled")
struct CreationRulesTests {
    @Test func orderCreatedStartsAnOrderFromItsData() throws {
        let token = UUID()
        let created = OrderEvent.created(OrderCreated(
            accountId: "acct-9", productId: "coins.7", quantity: 3, amount: Money(value: 1200, currency: "CNY"),
            provider: .alipay, environment: .sandbox, appAccountToken: token))
        let order = try #require(record(created, after: []).order)
        #expect(order == Order(
            orderId: Sample.orderId, accountId: "acct-9", productId: "coins.7", quantity: 3,
            amount: Money(value: 1200, currency: "CNY"), provider: .alipay, environment: .sandbox, appAccountToken: token,
            state: .created, version: 1, transactionId: nil, flags: [], verificationAttempts: 0, lastErrorCode: nil,
            refundedAmount: nil, createdAt: Sample.time(1), updatedAt: Sample.time(1), grantedAt: nil, finishedAt: nil,
            refundedAt: nil))
    }

    @Test(arguments: OrderState.allCases)
    func orderCreatedOnAnExistingOrderIsRefused(state: OrderState) {
        #expect(record(Sample.created, in: state).refusal == .orderExists(orderId: Sample.orderId))
    }

    static let eventsOtherThanCreation: [OrderEvent] = [
        Sample.queued, Sample.receipt(), Sample.verified(), Sample.failed(retryable: true), Sample.granted(),
        Sample.finished, Sample.cancelled, Sample.refunded(),
    ]

    @Test(arguments: eventsOtherThanCreation)
    func anyOtherEventBeforeOrderCreatedIsRefused(event: OrderEvent) {
        #expect(record(event, after: []).refusal
            == .invalidTransition(state: nil, event: event.type, allowed: [.orderCreated]))
    }

    @Test func paymentQueuedFollowsOrderCreated() {
        #expect(record(Sample.queued, in: .created).state == .paymentQueued)
    }

    @Test func paymentQueuedRecordsTheTokenStoreKitWillCarry() {
        let token = UUID()
        let outcome = record(.paymentQueued(PaymentQueued(appAccountToken: token)), in: .created)
        #expect(outcome.order?.appAccountToken == token)
    }

    @Test(arguments: OrderState.all(except: .created))
    func paymentQueuedOutsideCreatedIsRefused(state: OrderState) {
        #expect(record(Sample.queued, in: state).refusal?.code == "invalid_transition")
    }

    @Test(arguments: [OrderState.created, .paymentQueued])
    func cancellingBeforeAnyReceiptCancelsTheOrder(state: OrderState) {
        #expect(record(Sample.cancelled, in: state).state == .cancelled)
    }

    @Test(arguments: OrderState.all(except: .created, .paymentQueued))
    func cancellingAfterAReceiptIsRefused(state: OrderState) {
        #expect(record(Sample.cancelled, in: state).refusal?.code == "invalid_transition")
    }
}
