import Foundation
import ProviderTestSupport
import LedgerCore
import LedgerProviders
import Testing

/// The WeChat Pay API v3 notification rules, one test per rule, with an RSA platform key and an APIv3 key the
/// tests make.
@Suite("WeChat Pay: API v3 notifications")
struct WeChatPayNotificationTests {
    typealias Kit = ProviderTestKit

    func refusal(headers: WeChatPayHeaders, body: [UInt8], now: Date = Kit.now,
                 verifier: WeChatPayNotificationVerifier = Kit.wechatVerifier()) -> WeChatPayVerificationError? {
        do { _ = try verifier.verify(headers: headers, body: body, now: now); return nil } catch { return error }
    }

    @Test func aValidPaymentNotificationIsDecryptedAndDecoded() throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        let notification = try Kit.wechatVerifier().verify(headers: try Kit.wechatHeaders(body: body), body: body, now: Kit.now)
        #expect(notification.id == "EV-2018022511223320873")
        #expect(notification.eventType == "TRANSACTION.SUCCESS")
        #expect(notification.rawBody == body)
        guard case .payment(let payment) = notification.resource else { Issue.record("not a payment"); return }
        #expect(payment.mchid == Kit.merchantId)
        #expect(payment.orderId == "order-1")
        #expect(payment.transactionId == "1217752501201407033233368018")
        #expect(payment.tradeState == .success)
        #expect(payment.amount == Money(value: 1234, currency: "CNY"))
        #expect(payment.successTime == RFC3339.parse("2026-05-01T04:00:04Z"))
    }

    @Test func aValidRefundNotificationIsDecryptedAndDecoded() throws {
        let body = try Kit.wechatBody(eventType: "REFUND.SUCCESS", resource: Kit.wechatRefundResource())
        let notification = try Kit.wechatVerifier().verify(headers: try Kit.wechatHeaders(body: body), body: body, now: Kit.now)
        guard case .refund(let refund) = notification.resource else { Issue.record("not a refund"); return }
        #expect(refund.outRefundNo == "refund-1")
        #expect(refund.refundId == "50000000382019052709732678859")
        #expect(refund.refundStatus == .success)
        #expect(refund.refund == Money(value: 500, currency: "CNY"))
        #expect(refund.total == Money(value: 1234, currency: "CNY"))
    }

    @Test(arguments: [-301.0, 301.0])
    func aTimestampMoreThanFiveMinutesFromNowIsRefused(offset: TimeInterval) throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        let headers = try Kit.wechatHeaders(body: body, timestamp: Kit.now.addingTimeInterval(offset))
        #expect(refusal(headers: headers, body: body) == .timestampOutOfWindow(secondsFromNow: Int64(offset)))
    }

    @Test(arguments: [-300.0, 300.0])
    func aTimestampWithinFiveMinutesIsAccepted(offset: TimeInterval) throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        let headers = try Kit.wechatHeaders(body: body, timestamp: Kit.now.addingTimeInterval(offset))
        #expect(refusal(headers: headers, body: body) == nil)
    }

    @Test func anUnknownSerialIsRefused() throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        let headers = try Kit.wechatHeaders(body: body, serial: "UNKNOWN")
        #expect(refusal(headers: headers, body: body) == .unknownSerial("UNKNOWN"))
    }

    @Test func aSignatureByAnotherKeyIsRefused() throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        let headers = try Kit.wechatHeaders(body: body, key: Kit.otherRSAKey)
        #expect(refusal(headers: headers, body: body) == .signatureInvalid)
    }

    @Test func aTamperedBodyIsRefused() throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        let headers = try Kit.wechatHeaders(body: body)
        let tampered = Array(String(decoding: body, as: UTF8.self)
            .replacingOccurrences(of: "TRANSACTION.SUCCESS", with: "REFUND.SUCCESS").utf8)
        #expect(tampered != body)
        #expect(refusal(headers: headers, body: tampered) == .signatureInvalid)
    }

    @Test func aTamperedCiphertextFailsItsTag() throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource(), tamperCiphertext: true)
        #expect(refusal(headers: try Kit.wechatHeaders(body: body), body: body) == .decryptionFailed)
    }

    @Test func aResourceEncryptedUnderAnotherAPIv3KeyFailsItsTag() throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource(), apiV3Key: "ffffffffffffffffffffffffffffffff")
        #expect(refusal(headers: try Kit.wechatHeaders(body: body), body: body) == .decryptionFailed)
    }

    @Test func anotherMerchantIdIsRefused() throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource(mchid: "1900000002"))
        #expect(refusal(headers: try Kit.wechatHeaders(body: body), body: body) == .merchantIdMismatch(found: "1900000002"))
        let refundBody = try Kit.wechatBody(eventType: "REFUND.ABNORMAL", resource: Kit.wechatRefundResource(mchid: "1900000002"))
        #expect(refusal(headers: try Kit.wechatHeaders(body: refundBody), body: refundBody) == .merchantIdMismatch(found: "1900000002"))
    }

    @Test func malformedHeadersAreRefusedNotTrapped() throws {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        var headers = try Kit.wechatHeaders(body: body)
        headers.signature = "***"
        #expect(refusal(headers: headers, body: body) == .malformedSignature)
        headers = try Kit.wechatHeaders(body: body)
        for timestamp in ["", "-1", "1e9", "99999999999999999999", " 1800000000"] {
            headers.timestamp = timestamp
            #expect(refusal(headers: headers, body: body) == .malformedTimestamp(timestamp))
        }
    }
}
