import Foundation
import LedgerCore
import LedgerProviders
import ProviderTestSupport
import Testing

/// An `alipay.trade.query` answer is believed only as far as Alipay signed it: the signed text is the top-level
/// response member's, found by the object's structure, and what is read is exactly that text.
@Suite("Alipay: answers to alipay.trade.query")
struct AlipayQueryAnswerTests {
    typealias Kit = ProviderTestKit

    static let paid: [String: JSONValue] = [
        "code": "10000", "msg": "Success", "out_trade_no": "order-1", "trade_no": "2026050122001400001234567890",
        "trade_status": "TRADE_SUCCESS", "total_amount": "12.34", "send_pay_date": "2026-05-01 12:00:04",
    ]
    static let notFound: [String: JSONValue] = [
        "code": "40004", "msg": "Business Failed", "sub_code": "ACQ.TRADE_NOT_EXIST", "sub_msg": "交易不存在",
        "out_trade_no": "order-1",
    ]

    /// A response's text and Alipay's signature over it.
    func signed(_ response: [String: JSONValue]) throws -> (text: String, sign: String) {
        let text = JSONValue.object(response).canonicalJSON
        return (text, try Kit.rsaSign(Array(text.utf8), with: Kit.alipayKey))
    }

    func failure(_ body: String) -> AlipayVerificationError? {
        do { _ = try Kit.alipayVerifier().verifyQueryAnswer(Array(body.utf8), orderId: "order-1"); return nil } catch { return error }
    }

    func storedFailure(_ body: String) -> AlipayVerificationError? {
        do { try Kit.alipayVerifier().verifyStoredQueryAnswer(body: Array(body.utf8)); return nil } catch { return error }
    }

    @Test func aGenuineAnswerVerifiesAndIsReadFromWhatWasSigned() throws {
        let (text, sign) = try signed(Self.paid)
        let body = "{ \"alipay_trade_query_response\" : \(text) , \"sign\":\"\(sign)\"}"
        guard case .trade(let trade) = try Kit.alipayVerifier().verifyQueryAnswer(Array(body.utf8), orderId: "order-1") else {
            Issue.record("a paid trade was not read")
            return
        }
        #expect(trade.tradeStatus == .tradeSuccess)
        #expect(trade.totalAmount == Money(value: 1234, currency: "CNY"))
        #expect(storedFailure(body) == nil)
    }

    /// The forgery of issue 41: Alipay's genuine "no such trade", nested under another key, first in the text; an
    /// unsigned `TRADE_SUCCESS` as the top-level member. The signature covers the nested text, not the one read.
    @Test func aSignedAnswerNestedUnderAnotherKeyDoesNotVouchForTheTopLevelOne() throws {
        let (genuine, sign) = try signed(Self.notFound)
        let forged = JSONValue.object(Self.paid).canonicalJSON
        for body in [
            "{\"detail\":{\"alipay_trade_query_response\":\(genuine)},\"alipay_trade_query_response\":\(forged),\"sign\":\"\(sign)\"}",
            "{\"note\":\"\\\"alipay_trade_query_response\\\":\(genuine.replacingOccurrences(of: "\"", with: "\\\""))\",\"alipay_trade_query_response\":\(forged),\"sign\":\"\(sign)\"}",
            "{\"detail\":[{\"error_response\":\(genuine)}],\"error_response\":\(forged),\"sign\":\"\(sign)\"}",
        ] {
            #expect(failure(body) == .signatureInvalid, "\(body)")
            #expect(storedFailure(body) == .signatureInvalid, "\(body)")
        }
    }

    @Test func aTopLevelResponseGivenTwiceIsRefused() throws {
        let (genuine, sign) = try signed(Self.notFound)
        let forged = JSONValue.object(Self.paid).canonicalJSON
        for key in ["alipay_trade_query_response", "error_response"] {
            for body in [
                "{\"\(key)\":\(genuine),\"\(key)\":\(forged),\"sign\":\"\(sign)\"}",
                "{\"\(key)\":\(forged),\"\(key)\":\(genuine),\"sign\":\"\(sign)\"}",
                // The same name, written with an escape.
                "{\"\(key)\":\(genuine),\"\(key.dropLast())\\u00\(String(key.utf8.last ?? 0, radix: 16))\":\(forged),\"sign\":\"\(sign)\"}",
            ] {
                #expect(failure(body) == .duplicateParameter(key), "\(body)")
                #expect(storedFailure(body) == .duplicateParameter(key), "\(body)")
            }
        }
        let twoSignatures = "{\"alipay_trade_query_response\":\(genuine),\"sign\":\"\(sign)\",\"sign\":\"\(sign)\"}"
        #expect(failure(twoSignatures) == .duplicateParameter("sign"))
    }

    /// A cross-border trade's answer: `total_amount` is in `trans_currency`. 4.99 USD does not pay a 4.99 CNY order.
    @Test func anAnswerInAnotherCurrencyDoesNotPayTheOrder() throws {
        let order = WaitingOrder.of(Money(value: 499, currency: "CNY"), provider: .alipay)
        func trade(_ changes: [String: JSONValue]) throws -> AlipayQueriedTrade? {
            let body = try Kit.alipayAnswer(Self.paid.merging(changes) { $1 })
            guard case .trade(let trade) = try Kit.alipayVerifier().verifyQueryAnswer(body, orderId: "order-1") else { return nil }
            return trade
        }
        let usd = try #require(try trade(["total_amount": "4.99", "trans_currency": "USD"]))
        #expect(usd.totalAmount == Money(value: 499, currency: "USD"))
        #expect(WaitingOrder.followUp(usd.message(receivedAt: Kit.now), on: order)?.events == [])
        let yuan = try #require(try trade(["total_amount": "4.99"]))
        #expect(yuan.totalAmount == Money(value: 499, currency: "CNY"))
        #expect(WaitingOrder.followUp(yuan.message(receivedAt: Kit.now), on: order)?.events.map(\.type) == [.receiptReceived, .receiptVerified])

        #expect(throws: AlipayVerificationError.malformedCurrency(field: "trans_currency", value: "usd")) {
            try trade(["total_amount": "4.99", "trans_currency": "usd"])
        }
    }

    @Test func anAnswerThatIsNotOneJSONObjectIsRefusedNotTrapped() throws {
        let (genuine, sign) = try signed(Self.paid)
        for body in [
            "", "[]", "\"x\"", "{", "{\"alipay_trade_query_response\":\(genuine),\"sign\":\"\(sign)\"} trailing",
            "{\"alipay_trade_query_response\":\(genuine),\"sign\":\"\(sign)\",}",
            "{\"alipay_trade_query_response\":\(genuine.dropLast()),\"sign\":\"\(sign)\"}",
        ] {
            #expect(failure(body) == .malformedBody, "\(body)")
        }
        #expect(failure("{\"alipay_trade_query_response\":\(genuine)}") == .missingSignature)
        #expect(failure("{\"sign\":\"\(sign)\"}") == .missingParameter("alipay_trade_query_response"))
        #expect(failure("{\"alipay_trade_query_response\":\"\(sign)\",\"sign\":\"\(sign)\"}") == .malformedBody)
    }
}
