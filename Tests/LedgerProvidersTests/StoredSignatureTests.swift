import Foundation
import LedgerCore
import LedgerProviders
import ProviderTestSupport
import Testing

/// Checking again the signature of an Alipay or WeChat Pay message as the ledger keeps it (the evidence its
/// `message(…)` writes): valid, a byte changed, another key, and a timestamp long stale (an audit's normal case).
@Suite("Stored Alipay and WeChat Pay messages: their signatures checked again")
struct StoredSignatureTests {
    typealias Kit = ProviderTestKit

    func failure(_ check: () throws(StoredSignatureError) -> Void) -> StoredSignatureError? {
        do { try check(); return nil } catch { return error }
    }

    /// `evidence` with `field` (a string) changed by `change`.
    func changing(_ evidence: JSONValue, _ field: String, _ change: (String) -> String) -> JSONValue {
        guard case .object(var members) = evidence, case .string(let text)? = members[field] else { return evidence }
        members[field] = .string(change(text))
        return .object(members)
    }

    // MARK: Alipay

    func alipayNotificationEvidence() throws -> JSONValue {
        try Kit.alipayVerifier().verify(body: try Kit.alipayBody(Kit.alipayParameters())).message(receivedAt: Kit.now).fact.evidence
    }

    func alipayQueryEvidence() throws -> JSONValue {
        let body = try Kit.alipayAnswer([
            "code": "10000", "msg": "Success", "out_trade_no": "order-1", "trade_no": "2026050122001400001234567890",
            "trade_status": "TRADE_SUCCESS", "total_amount": "12.34", "send_pay_date": "2026-05-01 12:00:04",
        ])
        guard case .trade(let trade) = try Kit.alipayVerifier().verifyQueryAnswer(body, orderId: "order-1") else {
            Issue.record("Alipay's answer holds no trade")
            return .null
        }
        return trade.message(receivedAt: Kit.now).fact.evidence
    }

    @Test func anAlipayNotificationAndQueryAnswerAsKeptVerifyAgain() throws {
        let notification = try alipayNotificationEvidence()
        let query = try alipayQueryEvidence()
        #expect(StoredMessageKind(evidence: notification) == .notification)
        #expect(StoredMessageKind(evidence: query) == .query)
        #expect(failure { () throws(StoredSignatureError) in try Kit.alipayVerifier().verifyStoredSignature(evidence: notification) } == nil)
        #expect(failure { () throws(StoredSignatureError) in try Kit.alipayVerifier().verifyStoredSignature(evidence: query) } == nil)
    }

    @Test func anAlipayMessageWithAByteChangedFails() throws {
        let notification = changing(try alipayNotificationEvidence(), "body") { $0.replacingOccurrences(of: "total_amount=12.34", with: "total_amount=12.35") }
        let query = changing(try alipayQueryEvidence(), "body") { $0.replacingOccurrences(of: "\"12.34\"", with: "\"12.35\"") }
        for evidence in [notification, query] {
            #expect(failure { () throws(StoredSignatureError) in try Kit.alipayVerifier().verifyStoredSignature(evidence: evidence) }
                == .alipay(.signatureInvalid))
        }
    }

    @Test func anAlipayMessageFailsWithAnotherAlipayKey() throws {
        let other = AlipayNotificationVerifier(appId: Kit.alipayAppId, publicKey: Kit.otherRSAKey.publicKey)
        for evidence in [try alipayNotificationEvidence(), try alipayQueryEvidence()] {
            #expect(failure { () throws(StoredSignatureError) in try other.verifyStoredSignature(evidence: evidence) } == .alipay(.signatureInvalid))
        }
    }

    /// Only the signature is judged: the app id was checked on arrival.
    @Test func anAlipayNotificationVerifiesAgainWhateverAppIdIsConfiguredNow() throws {
        let evidence = try alipayNotificationEvidence()
        let renamed = AlipayNotificationVerifier(appId: "2021999999999999", publicKey: Kit.alipayKey.publicKey, sellerId: "2088999")
        #expect(failure { () throws(StoredSignatureError) in try renamed.verifyStoredSignature(evidence: evidence) } == nil)
    }

    @Test func anAlipayErrorResponseIsCheckedOverItsOwnText() throws {
        let body = try Kit.alipayAnswer(["code": "40002", "sub_code": "isv.invalid-signature"], member: "error_response")
        #expect(throws: Never.self) { try Kit.alipayVerifier().verifyStoredQueryAnswer(body: body) }
        let other = AlipayNotificationVerifier(appId: Kit.alipayAppId, publicKey: Kit.otherRSAKey.publicKey)
        #expect(throws: AlipayVerificationError.signatureInvalid) { try other.verifyStoredQueryAnswer(body: body) }
    }

    // MARK: WeChat Pay

    func wechatNotificationEvidence(signedAt timestamp: Date = Kit.now) throws -> JSONValue {
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        let headers = try Kit.wechatHeaders(body: body, timestamp: timestamp)
        return try Kit.wechatVerifier().verify(headers: headers, body: body, now: timestamp)
            .message(headers: headers, receivedAt: timestamp).fact.evidence
    }

    func wechatQueryEvidence() throws -> JSONValue {
        let payment: JSONValue = [
            "mchid": .string(Kit.merchantId), "out_trade_no": "order-1", "transaction_id": "4200001234202611250000000001",
            "trade_state": "SUCCESS", "success_time": "2026-11-25T16:00:04+08:00", "amount": ["total": 1234, "currency": "CNY"],
        ]
        let body = Array(payment.canonicalJSON.utf8)
        let answer = try Kit.wechatVerifier().verifyQueryAnswer(
            status: 200, headers: try Kit.wechatHeaders(body: body), body: body, orderId: "order-1", now: Kit.now)
        guard case .trade(let trade) = answer, let message = trade.message(receivedAt: Kit.now) else {
            Issue.record("WeChat Pay's answer holds no paid trade")
            return .null
        }
        return message.fact.evidence
    }

    @Test func aWeChatPayNotificationAndQueryAnswerAsKeptVerifyAgain() throws {
        let query = try wechatQueryEvidence()
        #expect(StoredMessageKind(evidence: query) == .query)
        for evidence in [try wechatNotificationEvidence(), query] {
            #expect(failure { () throws(StoredSignatureError) in try Kit.wechatVerifier().verifyStoredSignature(evidence: evidence) } == nil)
        }
    }

    /// A timestamp a day old (or ahead): the arrival check refuses it; the audit judges the signature only.
    @Test(arguments: [-Kit.day, Kit.day])
    func aWeChatPayTimestampLongOutOfTheWindowStillVerifies(offset: TimeInterval) throws {
        let evidence = try wechatNotificationEvidence(signedAt: Kit.now.addingTimeInterval(offset))
        #expect(failure { () throws(StoredSignatureError) in try Kit.wechatVerifier().verifyStoredSignature(evidence: evidence) } == nil)
        let body = try Kit.wechatBody(resource: Kit.wechatPaymentResource())
        let stale = try Kit.wechatHeaders(body: body, timestamp: Kit.now.addingTimeInterval(offset))
        #expect(throws: WeChatPayVerificationError.timestampOutOfWindow(secondsFromNow: Int64(offset))) {
            try Kit.wechatVerifier().verify(headers: stale, body: body, now: Kit.now)
        }
    }

    @Test func aWeChatPayMessageWithAByteChangedFails() throws {
        let body = changing(try wechatNotificationEvidence(), "body") { $0.replacingOccurrences(of: "TRANSACTION.SUCCESS", with: "TRANSACTION.SUCCESs") }
        let timestamp = changing(try wechatNotificationEvidence(), "timestamp") { String(Int64($0).map { $0 + 1 } ?? 0) }
        let query = changing(try wechatQueryEvidence(), "body") { $0.replacingOccurrences(of: "1234", with: "1235") }
        for evidence in [body, timestamp, query] {
            #expect(failure { () throws(StoredSignatureError) in try Kit.wechatVerifier().verifyStoredSignature(evidence: evidence) }
                == .wechatPay(.signatureInvalid))
        }
    }

    @Test func aWeChatPayMessageFailsWithAnotherPlatformKeyOrAnUnknownSerial() throws {
        let apiV3Key = try #require(WeChatPayAPIv3Key(Kit.apiV3KeyText))
        let otherKey = WeChatPayNotificationVerifier(
            merchantId: Kit.merchantId, apiV3Key: apiV3Key, platformKeys: [Kit.platformSerial: Kit.otherRSAKey.publicKey])
        let otherSerial = WeChatPayNotificationVerifier(
            merchantId: Kit.merchantId, apiV3Key: apiV3Key, platformKeys: ["RETIRED": Kit.wechatPlatformKey.publicKey])
        for evidence in [try wechatNotificationEvidence(), try wechatQueryEvidence()] {
            #expect(failure { () throws(StoredSignatureError) in try otherKey.verifyStoredSignature(evidence: evidence) } == .wechatPay(.signatureInvalid))
            #expect(failure { () throws(StoredSignatureError) in try otherSerial.verifyStoredSignature(evidence: evidence) }
                == .wechatPay(.unknownSerial(Kit.platformSerial)))
        }
    }

    @Test func evidenceWithoutWhatWasSignedFailsNamingIt() throws {
        guard case .object(var members) = try wechatNotificationEvidence() else { return }
        members["serial"] = nil
        #expect(failure { () throws(StoredSignatureError) in try Kit.wechatVerifier().verifyStoredSignature(evidence: .object(members)) }
            == .evidenceIncomplete(field: "serial"))
        #expect(failure { () throws(StoredSignatureError) in try Kit.alipayVerifier().verifyStoredSignature(evidence: ["source": "query"]) }
            == .evidenceIncomplete(field: "body"))
        #expect(StoredSignatureError.evidenceIncomplete(field: "body").description == "evidence_incomplete (evidence.body)")
    }
}
