import Foundation
import LedgerCore
import Testing

@Suite("receipt.verified, verification.failed")
struct VerificationRulesTests {
    @Test(arguments: [OrderState.receiptReceived, .verificationFailed])
    func verificationMovesTheOrderToVerified(state: OrderState) {
        #expect(record(Sample.verified(), in: state).state == .verified)
    }

    @Test(arguments: OrderState.all(except: .receiptReceived, .verificationFailed))
    func verificationWithoutAPendingReceiptIsRefused(state: OrderState) {
        #expect(record(Sample.verified(), in: state).refusal?.code == "invalid_transition")
    }

    @Test func verificationOfAnotherTransactionIsRefused() {
        #expect(record(Sample.verified("other-tx"), in: .receiptReceived).refusal
            == .transactionMismatch(expected: Sample.transactionId, actual: "other-tx"))
    }

    @Test func verificationOfAnotherProductIsRefused() {
        #expect(record(Sample.verified(product: "gems.500"), in: .receiptReceived).refusal
            == .productMismatch(expected: Sample.productId, actual: "gems.500"))
    }

    @Test func sandboxReceiptForAProductionOrderIsRefused() {
        #expect(record(Sample.verified(environment: .sandbox), in: .receiptReceived).refusal
            == .environmentMismatch(expected: .production, actual: .sandbox))
    }

    /// A purchase Apple signed for another order's `appAccountToken` does not verify this order, even with its
    /// transaction id; the token the order holds (here derived from its id) or no token at all does.
    @Test func verificationOfAPurchaseForAnotherAppAccountTokenIsRefused() {
        func verified(_ token: UUID?) -> OrderEvent {
            .receiptVerified(ReceiptVerified(
                transactionId: Sample.transactionId, productId: Sample.productId, environment: .production,
                purchasedAt: Sample.start, appAccountToken: token))
        }
        let other = AppAccountToken.forOrderId("order-2")
        let refusal = record(verified(other), in: .receiptReceived).refusal
        #expect(refusal == .appAccountTokenMismatch(expected: AppAccountToken.forOrderId(Sample.orderId), actual: other))
        #expect(refusal?.code == "account_mismatch")
        #expect(record(verified(AppAccountToken.forOrderId(Sample.orderId)), in: .receiptReceived).state == .verified)
        #expect(record(verified(nil), in: .receiptReceived).state == .verified)
    }

    /// The provider's price must be the order's amount, currency included; a price it stated that is not in whole
    /// minor units never is. Only a verification without any price is not compared.
    @Test func verificationOfAnotherAmountOrOfAPriceNotInMinorUnitsIsRefused() {
        func verified(price: Money? = nil, unconverted: UnconvertedPrice? = nil) -> OrderEvent {
            .receiptVerified(ReceiptVerified(
                transactionId: Sample.transactionId, productId: Sample.productId, environment: .production,
                purchasedAt: Sample.start, price: price, unconvertedPrice: unconverted))
        }
        let cents500 = Money(value: 500, currency: "USD"), euros = Money(value: 499, currency: "EUR")
        #expect(record(verified(price: cents500), in: .receiptReceived).refusal == .amountMismatch(expected: Sample.amount, actual: cents500))
        #expect(record(verified(price: euros), in: .receiptReceived).refusal == .amountMismatch(expected: Sample.amount, actual: euros))
        let stated = UnconvertedPrice(milliunits: 4991, quantity: 1, currency: "USD")
        let refusal = record(verified(unconverted: stated), in: .receiptReceived).refusal
        #expect(refusal == .priceNotInMinorUnits(expected: Sample.amount, actual: stated))
        #expect(refusal?.code == "amount_mismatch")
        #expect(record(verified(price: Sample.amount), in: .receiptReceived).state == .verified)
        #expect(record(verified(), in: .receiptReceived).state == .verified)
    }

    @Test func verificationChecksTransactionThenProductThenEnvironment() {
        let everythingWrong = Sample.verified("other-tx", product: "gems.500", environment: .sandbox)
        #expect(record(everythingWrong, in: .receiptReceived).refusal?.code == "transaction_mismatch")
        let productAndEnvironmentWrong = Sample.verified(product: "gems.500", environment: .sandbox)
        #expect(record(productAndEnvironmentWrong, in: .receiptReceived).refusal?.code == "product_mismatch")
    }

    @Test(arguments: [OrderState.receiptReceived, .verificationFailed])
    func retryableFailureWaitsForAnotherAttempt(state: OrderState) throws {
        let before = try #require(OrderDecider.fold(Sample.recorded(Sample.history(to: state))))
        let order = try #require(record(Sample.failed(retryable: true, code: "21009"), in: state).order)
        #expect(order.state == .verificationFailed)
        #expect(order.verificationAttempts == before.verificationAttempts + 1)
        #expect(order.lastErrorCode == "21009")
    }

    @Test(arguments: [OrderState.receiptReceived, .verificationFailed])
    func permanentFailureRejectsTheOrder(state: OrderState) throws {
        let order = try #require(record(Sample.failed(retryable: false, code: "21003"), in: state).order)
        #expect(order.state == .rejected)
        #expect(order.lastErrorCode == "21003")
    }

    @Test(arguments: OrderState.all(except: .receiptReceived, .verificationFailed))
    func failureWithoutAPendingReceiptIsRefused(state: OrderState) {
        #expect(record(Sample.failed(retryable: true), in: state).refusal?.code == "invalid_transition")
    }

    @Test func verificationAfterFailuresKeepsTheAttemptCount() throws {
        let history = Sample.history(to: .receiptReceived) + [Sample.failed(retryable: true), Sample.failed(retryable: true)]
        let order = try #require(record(Sample.verified(), after: history).order)
        #expect(order.state == .verified)
        #expect(order.verificationAttempts == 2)
        #expect(order.lastErrorCode == "21005")
    }
}
