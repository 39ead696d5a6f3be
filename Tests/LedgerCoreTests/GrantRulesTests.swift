import Foundation
import LedgerCore
import Testing

@Suite("order.granted")
struct GrantRulesTests {
    @Test func grantCreditsAVerifiedOrder() throws {
        let order = try #require(record(Sample.granted(), in: .verified).order)
        #expect(order.state == .granted)
        #expect(order.grantedAt == Sample.time(order.version))
    }

    @Test func grantOfATransactionAnotherOrderGrantedIsRefused() {
        let binding = TransactionBinding(transactionId: Sample.transactionId, orderId: "order-2", granted: true)
        #expect(record(Sample.granted(), in: .verified, binding: binding).refusal
            == .alreadyGranted(transactionId: Sample.transactionId, orderId: "order-2"))
    }

    /// "Was it credited?": a repeated grant is told it was, not that the order moved on.
    @Test(arguments: [OrderState.granted, .finished, .refunded])
    func secondGrantOfTheSameTransactionIsRefusedAsAlreadyGranted(state: OrderState) {
        let binding = TransactionBinding(transactionId: Sample.transactionId, orderId: Sample.orderId, granted: true)
        #expect(record(Sample.granted(), in: state, binding: binding).refusal
            == .alreadyGranted(transactionId: Sample.transactionId, orderId: Sample.orderId))
    }

    @Test(arguments: OrderState.all(except: .verified))
    func grantOfAnUnverifiedOrderIsRefused(state: OrderState) {
        #expect(record(Sample.granted(), in: state).refusal?.code == "invalid_transition")
    }

    @Test func grantOfAnotherTransactionIsRefused() {
        #expect(record(Sample.granted("other-tx"), in: .verified).refusal
            == .transactionMismatch(expected: Sample.transactionId, actual: "other-tx"))
    }

    @Test func grantToAnotherAccountIsRefused() {
        #expect(record(Sample.granted(to: "acct-2"), in: .verified).refusal
            == .accountMismatch(expected: Sample.accountId, actual: "acct-2"))
    }
}
