import Foundation
import ProviderTestSupport
import LedgerCore
import LedgerProviders
import Testing

/// The Alipay asynchronous notification rules, one test per rule, against an RSA key the tests make.
@Suite("Alipay: asynchronous notifications")
struct AlipayNotificationTests {
    typealias Kit = ProviderTestKit

    func refusal(_ body: [UInt8], verifier: AlipayNotificationVerifier = Kit.alipayVerifier()) -> AlipayVerificationError? {
        do { _ = try verifier.verify(body: body); return nil } catch { return error }
    }

    @Test func aValidNotificationIsDecoded() throws {
        let body = try Kit.alipayBody(Kit.alipayParameters())
        let notification = try Kit.alipayVerifier().verify(body: body)
        #expect(notification.orderId == "order-1")
        #expect(notification.tradeNo == "2026050122001400001234567890")
        #expect(notification.tradeStatus == .tradeSuccess)
        #expect(notification.totalAmount == Money(value: 1234, currency: "CNY"))
        #expect(notification.refundFee == nil)
        #expect(notification.notifyId == "ac05099524730693a8b330c5ecf72da9786")
        #expect(notification.parameters["subject"] == "金币 100 + bonus")
        #expect(notification.paymentTime == RFC3339.parse("2026-05-01T04:00:04Z"))
        #expect(notification.rawBody == body)
    }

    @Test func aPlusInTheBodyIsASpace() throws {
        var body = try Kit.alipayBody(Kit.alipayParameters().map { $0.0 == "subject" ? ($0.0, "a b") : $0 })
        body = Array(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "subject=a%20b", with: "subject=a+b").utf8)
        #expect(try Kit.alipayVerifier().verify(body: body).parameters["subject"] == "a b")
    }

    @Test func aSignatureByAnotherKeyIsRefused() throws {
        let body = try Kit.alipayBody(Kit.alipayParameters(), key: Kit.otherRSAKey)
        #expect(refusal(body) == .signatureInvalid)
    }

    @Test func aTamperedParameterIsRefused() throws {
        var sent = Kit.alipayParameters()
        let signed = sent
        sent = sent.map { $0.0 == "total_amount" ? ($0.0, "1234.00") : $0 }
        #expect(refusal(try Kit.alipayBody(sent, signedParameters: signed)) == .signatureInvalid)
    }

    @Test func anotherAppIdIsRefused() throws {
        let parameters = Kit.alipayParameters().map { $0.0 == "app_id" ? ($0.0, "2021999999999999") : $0 }
        #expect(refusal(try Kit.alipayBody(parameters)) == .appIdMismatch(found: "2021999999999999"))
    }

    @Test func anotherSellerIdIsRefusedWhenOneIsConfigured() throws {
        let verifier = AlipayNotificationVerifier(appId: Kit.alipayAppId, publicKey: Kit.alipayKey.publicKey, sellerId: "2088999")
        #expect(refusal(try Kit.alipayBody(Kit.alipayParameters()), verifier: verifier) == .sellerIdMismatch(found: "2088000000000001"))
    }

    @Test func aDuplicateParameterIsRefused() throws {
        let body = try Kit.alipayBody(Kit.alipayParameters()) + Array("&out_trade_no=order-2".utf8)
        #expect(refusal(body) == .duplicateParameter("out_trade_no"))
    }

    @Test func aCharsetOtherThanUTF8IsRefused() throws {
        let parameters = Kit.alipayParameters().map { $0.0 == "charset" ? ($0.0, "GBK") : $0 }
        #expect(refusal(try Kit.alipayBody(parameters)) == .unsupportedCharset("GBK"))
    }

    @Test func aSignTypeOtherThanRSA2IsRefused() throws {
        let body = try Kit.alipayBody(Kit.alipayParameters())
        let rsa1 = Array(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "sign_type=RSA2", with: "sign_type=RSA").utf8)
        #expect(refusal(rsa1) == .unsupportedSignType("RSA"))
    }

    @Test func aMissingSignatureIsRefused() throws {
        #expect(refusal(Kit.formEncode(Kit.alipayParameters())) == .missingSignature)
    }

    @Test func malformedBodiesAreRefusedNotTrapped() {
        #expect(refusal(Array("a=1&b".utf8)) == .malformedBody)
        #expect(refusal(Array("a=%4".utf8)) == .malformedBody)
        #expect(refusal(Array("a=%zz".utf8)) == .malformedBody)
        #expect(refusal(Array("a=%FF".utf8)) == .invalidCharacterEncoding)
        // More combining marks in a row than anything may compare in linear time (`StreamSafeText`), key or value.
        let marks = String(repeating: "%CC%81", count: 31)
        #expect(refusal(Array("e\(marks)=1".utf8)) == .invalidCharacterEncoding)
        #expect(refusal(Array("a=e\(marks)".utf8)) == .invalidCharacterEncoding)
        #expect(refusal(Array("sign=%%%".utf8)) == .malformedBody)
        #expect(refusal(Array("sign=not*base64".utf8)) == .malformedSignature)
    }

    @Test func emptyValuesTakeNoPartInTheSignedContent() throws {
        // `buyer_logon_id=` is sent empty; the signature is over the content without it.
        let parameters = Kit.alipayParameters()
        #expect(parameters.contains { $0.0 == "buyer_logon_id" && $0.1.isEmpty })
        _ = try Kit.alipayVerifier().verify(body: try Kit.alipayBody(parameters))
    }

    @Test(arguments: [("12.3", 1230), ("12.34", 1234), ("0.01", 1), ("12", 1200), ("0", 0), ("100000000.00", 10_000_000_000)])
    func wellFormedAmountsBecomeFen(text: String, fen: Int64) throws {
        #expect(DecimalAmount.minorUnits(text) == fen)
        let notification = try Kit.alipayVerifier().verify(body: try Kit.alipayBody(Kit.alipayParameters(totalAmount: text)))
        #expect(notification.totalAmount == Money(value: fen, currency: "CNY"))
    }

    @Test(arguments: ["1e3", "12.345", "-1", "", "+1", "1.", ".5", "012", " 1", "1 ", "1,00", "0x10", "１２", "9999999999999999", "NaN"])
    func otherAmountFormsAreRefused(text: String) throws {
        #expect(DecimalAmount.minorUnits(text) == nil)
        let error = refusal(try Kit.alipayBody(Kit.alipayParameters(totalAmount: text)))
        #expect(error == (text.isEmpty ? .missingParameter("total_amount") : .malformedAmount(field: "total_amount", value: text)))
    }

    @Test func aRefundFeeIsDecodedLikeAnAmount() throws {
        var parameters = Kit.alipayParameters()
        parameters.append(("refund_fee", "5.00"))
        parameters.append(("gmt_refund", "2026-05-02 09:00:00"))
        let notification = try Kit.alipayVerifier().verify(body: try Kit.alipayBody(parameters))
        #expect(notification.refundFee == Money(value: 500, currency: "CNY"))
        #expect(notification.refundTime == RFC3339.parse("2026-05-02T01:00:00Z"))
        parameters[parameters.count - 2] = ("refund_fee", "5.001")
        #expect(refusal(try Kit.alipayBody(parameters)) == .malformedAmount(field: "refund_fee", value: "5.001"))
    }

    /// A cross-border trade names its currency in `trans_currency`; its amounts are in that currency, not in yuan.
    @Test func theAmountsAreInTransCurrencyWhenAlipayNamesOne() throws {
        func notification(_ currency: String, total: String, refund: String? = nil) throws -> AlipayNotification {
            var parameters = Kit.alipayParameters(totalAmount: total) + [("trans_currency", currency)]
            if let refund { parameters.append(("refund_fee", refund)) }
            return try Kit.alipayVerifier().verify(body: try Kit.alipayBody(parameters))
        }
        let usd = try notification("USD", total: "4.99", refund: "1.00")
        #expect(usd.totalAmount == Money(value: 499, currency: "USD"))
        #expect(usd.refundFee == Money(value: 100, currency: "USD"))
        #expect(try notification("JPY", total: "500").totalAmount == Money(value: 500, currency: "JPY"))
        #expect(try notification("JPY", total: "500.00").totalAmount == Money(value: 500, currency: "JPY"))
        #expect(try notification("KWD", total: "1.234").totalAmount == Money(value: 1234, currency: "KWD"))
        #expect(try notification("CNY", total: "4.99").totalAmount == Money(value: 499, currency: "CNY"))

        let parameters = Kit.alipayParameters(totalAmount: "500.50") + [("trans_currency", "JPY")]
        #expect(refusal(try Kit.alipayBody(parameters)) == .malformedAmount(field: "total_amount", value: "500.50"))
        for currency in ["usd", "US", "USDT", "U$D", "１２３"] {
            let parameters = Kit.alipayParameters(totalAmount: "4.99") + [("trans_currency", currency)]
            #expect(refusal(try Kit.alipayBody(parameters)) == .malformedCurrency(field: "trans_currency", value: currency))
        }
    }

    /// 4.99 USD is not the 4.99 CNY the order asks: the ledger's comparison refuses it; 4.99 CNY pays it.
    @Test func aPaymentInAnotherCurrencyDoesNotPayTheOrder() throws {
        let order = WaitingOrder.of(Money(value: 499, currency: "CNY"), provider: .alipay)
        func followed(_ parameters: [(String, String)]) throws -> [EventType]? {
            let message = try Kit.alipayVerifier().verify(body: try Kit.alipayBody(parameters)).message(receivedAt: Kit.now)
            return WaitingOrder.followUp(message, on: order)?.events.map(\.type)
        }
        #expect(try followed(Kit.alipayParameters(totalAmount: "4.99") + [("trans_currency", "USD")]) == [])
        #expect(try followed(Kit.alipayParameters(totalAmount: "4.99")) == [.receiptReceived, .receiptVerified])
    }

    @Test func anUnknownTradeStatusIsRefused() throws {
        let parameters = Kit.alipayParameters().map { $0.0 == "trade_status" ? ($0.0, "TRADE_PENDING") : $0 }
        #expect(refusal(try Kit.alipayBody(parameters)) == .unknownTradeStatus("TRADE_PENDING"))
    }
}
