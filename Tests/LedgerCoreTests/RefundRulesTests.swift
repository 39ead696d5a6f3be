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

    /// A refund is at most what was paid, in the order's currency: one write token could otherwise make every revenue
    /// report of its day unanswerable (a refund of Int64.max on two orders adds up past what a sum holds).
    @Test func refundOfMoreThanWasPaidIsRefused() {
        let tooMuch = Money(value: Sample.amount.value + 1, currency: Sample.amount.currency)
        #expect(record(Sample.refunded(amount: tooMuch), in: .granted).refusal
            == .refundExceedsPayment(paid: Sample.amount, refund: tooMuch))
        #expect(record(Sample.refunded(amount: tooMuch), in: .granted).refusal?.code == "amount_mismatch")
        #expect(record(Sample.refunded(amount: Sample.amount), in: .granted).refusal == nil, "the whole amount is allowed")
    }

    @Test func refundInAnotherCurrencyIsRefused() {
        let euros = Money(value: 1, currency: "EUR")
        #expect(record(Sample.refunded(amount: euros), in: .finished).refusal
            == .refundExceedsPayment(paid: Sample.amount, refund: euros))
    }

    @Test func noAmountPastTheBoundParses() throws {
        let data: JSONValue = ["transactionId": "tx", "amount": ["value": .int(Money.maximumValue + 1), "currency": "USD"]]
        #expect(throws: EventValidationError.self) { try OrderEvent(type: "order.refunded", data: data) }
        let created: JSONValue = [
            "accountId": "a", "productId": "p", "provider": "app_store",
            "amount": ["value": .int(Int64.max), "currency": "USD"],
        ]
        #expect(throws: EventValidationError.invalidField(
            field: "data.amount.value", message: "data.amount.value must be a whole number of minor units from 0 to 1000000000000")
        ) { try OrderEvent(type: "order.created", data: created) }
    }
}
