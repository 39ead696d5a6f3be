import Foundation
import LedgerCore
import LedgerProviders
import ProviderTestSupport
import Testing

/// Apple's price (milliunits per item) against the order's amount (minor units), by every path a signed transaction
/// takes: a notification's or an answer's payment (`ProviderFollowUp`), and a StoreKit 2 transaction posted with
/// `receipt.received` (its `verification`, judged by `OrderDecider`). A price that is not exactly the order's amount
/// never verifies it (issue 41, item 5).
@Suite("App Store: the price Apple signed is compared with the order's amount")
struct AppStorePriceTests {
    typealias Kit = ProviderTestKit
    let ca: ProviderTestKit.CA
    init() throws { ca = try ProviderTestKit.CA() }

    static let productId = "com.example.coins.100"
    static let usd499 = Money(value: 499, currency: "USD")

    func transaction(price: Int64?, currency: String = "USD", quantity: Int = 1) async throws -> AppStoreTransaction {
        var payload = Kit.transactionPayload()
        payload["price"] = price
        payload["currency"] = currency
        payload["quantity"] = quantity
        return try await Kit.verifier(trusting: ca).verifyTransaction(try Kit.jws(payload: payload, ca: ca), now: Kit.now)
    }

    /// What a payment at `price` leads to on a 4.99 USD order waiting for its payment: the follow-up of the answer
    /// (Get Transaction Info), and the decision on the verification of a posted signed transaction.
    func outcome(price: Int64?) async throws -> (followed: [EventType], followUpRefusal: String?, postedRefusal: String?) {
        let signed = try await transaction(price: price)
        let waiting = WaitingOrder.of(Self.usd499, provider: .appStore, productId: Self.productId)
        let followUp = try #require(WaitingOrder.followUp(signed.queriedMessage, on: waiting))
        let received = WaitingOrder.of(
            Self.usd499, provider: .appStore, productId: Self.productId,
            then: [.receiptReceived(ReceiptReceived(transactionId: signed.transactionId))])
        let posted = OrderDecider.decide(
            received, .receiptVerified(signed.verification), orderId: "order-1", binding: nil)
        return (followUp.events.map(\.type), followUp.refusal?.code, posted?.code)
    }

    /// 4991 milliunits is 499.1 cents, -4990 a negative price, 1 a tenth of a cent: none is 4.99 USD.
    @Test(arguments: [4991, -4990, 1] as [Int64])
    func aPriceThatIsNotExactlyTheOrdersAmountDoesNotVerifyIt(price: Int64) async throws {
        let (followed, followUpRefusal, postedRefusal) = try await outcome(price: price)
        #expect(followed == [])
        #expect(followUpRefusal == "amount_mismatch")
        #expect(postedRefusal == "amount_mismatch")
        let paid = try await transaction(price: price).paidPrice
        #expect(paid == .unconverted(UnconvertedPrice(milliunits: price, quantity: 1, currency: "USD")))
    }

    @Test func fourThousandNineHundredNinetyMilliunitsAre499CentsAndVerify() async throws {
        let (followed, followUpRefusal, postedRefusal) = try await outcome(price: 4990)
        #expect(followed == [.receiptReceived, .receiptVerified])
        #expect(followUpRefusal == nil)
        #expect(postedRefusal == nil)
    }

    /// An exact price that is another amount (1000 USD) is refused alike.
    @Test func anotherExactAmountDoesNotVerify() async throws {
        let (followed, followUpRefusal, postedRefusal) = try await outcome(price: 1_000_000)
        #expect(followed == [])
        #expect(followUpRefusal == "amount_mismatch")
        #expect(postedRefusal == "amount_mismatch")
    }

    /// Only a transaction that carries no price at all skips the comparison.
    @Test func aTransactionWithoutAPriceIsNotCompared() async throws {
        let (followed, _, postedRefusal) = try await outcome(price: nil)
        #expect(followed == [.receiptReceived, .receiptVerified])
        #expect(postedRefusal == nil)
        #expect(try await transaction(price: nil).paidPrice == .notStated)
    }

    @Test func pricesConvertByTheCurrencysExponentTimesTheQuantity() async throws {
        #expect(try await transaction(price: 4990, quantity: 3).paidPrice == .amount(Money(value: 1497, currency: "USD")))
        #expect(try await transaction(price: 160_000, currency: "JPY").paidPrice == .amount(Money(value: 160, currency: "JPY")))
        #expect(try await transaction(price: 160_500, currency: "JPY").paidPrice
            == .unconverted(UnconvertedPrice(milliunits: 160_500, quantity: 1, currency: "JPY")))
        #expect(try await transaction(price: 1234, currency: "KWD").paidPrice == .amount(Money(value: 1234, currency: "KWD")))
        // CLF has four decimals: a milliunit is ten of its minor units, always exact.
        #expect(try await transaction(price: 4990, currency: "CLF").paidPrice == .amount(Money(value: 49900, currency: "CLF")))
        #expect(try await transaction(price: .max, quantity: 2).paidPrice
            == .unconverted(UnconvertedPrice(milliunits: .max, quantity: 2, currency: "USD")))
    }

    /// The fact and the verification keep a price not in minor units as Apple stated it, and it reads back.
    @Test func anUnconvertedPriceSurvivesItsStoredData() async throws {
        let signed = try await transaction(price: 4991)
        let fact = OrderEvent.providerNotified(signed.queriedMessage.fact)
        #expect(try OrderEvent(type: "provider.notified", data: fact.data) == fact)
        let verification = OrderEvent.receiptVerified(signed.verification)
        #expect(try OrderEvent(type: "receipt.verified", data: verification.data) == verification)
        #expect(verification.data["unconvertedPrice"] == ["milliunits": 4991, "quantity": 1, "currency": "USD"])
        #expect(verification.data["price"] == nil)
    }
}
