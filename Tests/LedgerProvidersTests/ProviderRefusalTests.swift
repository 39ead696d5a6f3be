import Foundation
import LedgerCore
import LedgerProviders
import ProviderTestSupport
import Testing

/// A provider's refusal that it did not sign (WeChat Pay signs only a request it accepted; Alipay signs an
/// `error_response` only sometimes) is believed in nothing, and is not a forgery either: it is its own error, which
/// recovery reads as a configuration to fix or the provider's refusal (`ProviderQuestions`). A paid answer without a
/// signature stays a verification failure. Before, every one of them was logged as a forged answer.
@Suite("Providers: refusals they did not sign, and what a WeChat Pay REFUND answer records")
struct ProviderRefusalTests {
    typealias Kit = ProviderTestKit

    func weChatFailure(status: Int, signed: Bool, _ body: String) -> WeChatPayVerificationError? {
        let bytes = Array(body.utf8)
        do {
            let headers = signed ? try Kit.wechatHeaders(body: bytes) : nil
            _ = try Kit.wechatVerifier().verifyQueryAnswer(status: status, headers: headers, body: bytes, orderId: "wx-1", now: Kit.now)
            return nil
        } catch let error as WeChatPayVerificationError {
            return error
        } catch {
            Issue.record("signing failed: \(error)")
            return nil
        }
    }

    @Test func weChatPayRefusalsWithoutSignatureAreTheirOwnError() {
        let invalid = #"{"code":"INVALID_REQUEST","message":"Http头缺少Accept或User-Agent"}"#
        #expect(weChatFailure(status: 400, signed: false, invalid) == .unsignedRefusal(status: 400, code: "INVALID_REQUEST", message: "Http头缺少Accept或User-Agent"))
        #expect(weChatFailure(status: 401, signed: false, #"{"code":"SIGN_ERROR","message":"签名错误"}"#) == .unsignedRefusal(status: 401, code: "SIGN_ERROR", message: "签名错误"))
        #expect(weChatFailure(status: 400, signed: true, invalid) == .queryFailed(status: 400, code: "INVALID_REQUEST", message: "Http头缺少Accept或User-Agent"))
        // A 200 without its signature is no refusal: nothing in it may be believed, and it says so.
        #expect(weChatFailure(status: 200, signed: false, #"{"trade_state":"SUCCESS"}"#) == .unsignedAnswer)
    }

    @Test func alipayRefusalsWithoutSignatureAreTheirOwnError() {
        func failure(_ body: String) -> AlipayVerificationError? {
            do { _ = try Kit.alipayVerifier().verifyQueryAnswer(Array(body.utf8), orderId: "order-1"); return nil } catch { return error }
        }
        #expect(failure(#"{"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-app-id","sub_msg":"无效的AppID参数"}}"#)
            == .unsignedRefusal(code: "40002", subCode: "isv.invalid-app-id", message: "无效的AppID参数"))
        // An unsigned "paid" is what a forger sends: a missing signature, as before.
        #expect(failure(#"{"alipay_trade_query_response":{"code":"10000","out_trade_no":"order-1","trade_no":"1","trade_status":"TRADE_SUCCESS","total_amount":"1.00"}}"#)
            == .missingSignature)
    }

    /// `REFUND` says the trade was paid and a refund of it (of part, or all) began: the payment is recorded, never a
    /// refund of an amount the answer does not give.
    @Test func aWeChatPayRefundStateRecordsThePaymentNotARefund() throws {
        let body = JSONValue.object([
            "mchid": .string(Kit.merchantId), "out_trade_no": "wx-1", "transaction_id": "4200001234202611250000000001",
            "trade_state": "REFUND", "amount": ["total": 1234, "currency": "CNY"], "success_time": "2026-11-25T10:00:00+08:00",
        ]).canonicalJSON
        let bytes = Array(body.utf8)
        let answer = try Kit.wechatVerifier().verifyQueryAnswer(
            status: 200, headers: try Kit.wechatHeaders(body: bytes), body: bytes, orderId: "wx-1", now: Kit.now)
        guard case .trade(let trade) = answer, let message = trade.message(receivedAt: Kit.now) else {
            Issue.record("a REFUND answer records nothing: \(answer)")
            return
        }
        #expect(message.fact.effect == .payment)
        #expect(message.fact.amount == Money(value: 1234, currency: "CNY"))
        #expect(message.fact.purchasedAt != nil)
    }
}
