import Foundation
import LedgerCore
import Testing

@Suite("receipt.received")
struct ReceiptRulesTests {
    @Test(arguments: [OrderState.created, .paymentQueued])
    func firstReceiptBindsTheOrderToItsTransaction(state: OrderState) throws {
        let order = try #require(record(Sample.receipt(), in: state).order)
        #expect(order.state == .receiptReceived)
        #expect(order.transactionId == Sample.transactionId)
        #expect(order.flags == [])
    }

    @Test func receiptAfterARetryableFailureIsAccepted() {
        #expect(record(Sample.receipt(), in: .verificationFailed).state == .receiptReceived)
    }

    @Test func receiptAfterARetryableFailureWithAnotherTransactionIsRefused() {
        #expect(record(Sample.receipt("other-tx"), in: .verificationFailed).refusal
            == .transactionMismatch(expected: Sample.transactionId, actual: "other-tx"))
    }

    @Test func receiptAfterCancellingIsAcceptedAndFlaggedLate() throws {
        let order = try #require(record(Sample.receipt(), in: .cancelled).order)
        #expect(order.state == .receiptReceived)
        #expect(order.transactionId == Sample.transactionId)
        #expect(order.flags == [.lateReceipt])
    }

    @Test(arguments: OrderState.allCases)
    func receiptOfATransactionBoundToAnotherOrderIsRefused(state: OrderState) {
        let binding = TransactionBinding(transactionId: Sample.transactionId, orderId: "order-2", granted: false)
        #expect(record(Sample.receipt(), in: state, binding: binding).refusal
            == .transactionBoundElsewhere(transactionId: Sample.transactionId, orderId: "order-2"))
    }

    @Test func receiptOfATransactionBoundToThisOrderIsAccepted() {
        let binding = TransactionBinding(transactionId: Sample.transactionId, orderId: Sample.orderId, granted: false)
        #expect(record(Sample.receipt(), in: .receiptReceived, binding: binding).refusal == nil)
    }

    /// StoreKit re-delivers a transaction until it is finished (and a support agent may resubmit it later).
    @Test(arguments: [OrderState.receiptReceived, .verified, .granted, .finished, .refunded])
    func resubmittedReceiptIsRecordedWithoutChangingTheState(state: OrderState) throws {
        let before = try #require(OrderDecider.fold(Sample.recorded(Sample.history(to: state))))
        let after = try #require(record(Sample.receipt(), in: state).order)
        #expect(after.state == state)
        #expect(after.version == before.version + 1)
        #expect(after.flags == before.flags)
    }

    @Test(arguments: [OrderState.receiptReceived, .verified, .granted, .finished, .refunded])
    func resubmittedReceiptOfAnotherTransactionIsRefused(state: OrderState) {
        #expect(record(Sample.receipt("other-tx"), in: state).refusal
            == .transactionMismatch(expected: Sample.transactionId, actual: "other-tx"))
    }

    @Test func receiptForARejectedOrderIsRefused() {
        #expect(record(Sample.receipt(), in: .rejected).refusal?.code == "invalid_transition")
    }
}
