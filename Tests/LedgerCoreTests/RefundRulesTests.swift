import Foundation
import LedgerCore
import Testing

@Suite("order.refunded")
struct RefundRulesTests {
    @Test(arguments: [OrderState.granted, .finished])
    func refundAfterTheGrantRefundsTheWholeAmount(state: OrderState) throws {
        let order = try #require(record(Sample.refunded(), in: state).order)
        #expect(order.state == .refunded)
        #expect(order.refundedAt == Sample.time(order.version))
        #expect(order.refundedAmount == Sample.amount)
        #expect(order.flags == [])
    }

    @Test func partialRefundRecordsItsAmount() {
        let part = Money(value: 100, currency: "USD")
        #expect(record(Sample.refunded(amount: part), in: .granted).order?.refundedAmount == part)
    }

    @Test func refundBeforeTheGrantIsAcceptedAndFlagged() throws {
        let order = try #require(record(Sample.refunded(), in: .verified).order)
        #expect(order.state == .refunded)
        #expect(order.flags == [.refundedBeforeGrant])
    }

    @Test func refundOfAnotherTransactionIsRefused() {
        #expect(record(Sample.refunded("other-tx"), in: .granted).refusal
            == .transactionMismatch(expected: Sample.transactionId, actual: "other-tx"))
    }

    @Test(arguments: OrderState.all(except: .verified, .granted, .finished))
    func refundBeforeVerificationOrTwiceIsRefused(state: OrderState) {
        #expect(record(Sample.refunded(), in: state).refusal?.code == "invalid_transition")
    }

    @Test func grantAfterARefundBeforeTheGrantIsRefused() {
        let history = Sample.history(to: .verified) + [Sample.refunded()]
        #expect(record(Sample.granted(), after: history).refusal?.code == "invalid_transition")
    }
}
