import Crypto
import Foundation
import LedgerCore
import _CryptoExtras

/// Alipay's answer to `alipay.trade.query`, verified: `{"alipay_trade_query_response": {...}, "sign": "..."}`, where
/// `sign` is SHA256withRSA by Alipay's key over the exact text of the response object as it appears in the body
/// (not a re-serialisation: the bytes between its braces, as Alipay's SDKs take them).
public enum AlipayTradeQueryAnswer: Sendable, Hashable {
    /// `10000`: the trade as Alipay knows it.
    case trade(AlipayQueriedTrade)
    /// `40004` / `ACQ.TRADE_NOT_EXIST`: no trade yet for that order (not paid, or not yet): ask again later.
    case tradeNotFound
}

public struct AlipayQueriedTrade: Sendable, Hashable {
    public var orderId: String
    public var tradeNo: String
    public var tradeStatus: AlipayTradeStatus
    public var totalAmount: Money
    public var paymentTime: Date?
    /// The whole body as Alipay sent it: the evidence, which can be verified again.
    public var rawBody: [UInt8]

    /// The fact this answer records, as a notification's would: a payment (`TRADE_SUCCESS`, `TRADE_FINISHED`), a
    /// closed unpaid trade (`TRADE_CLOSED`), or evidence only (`WAIT_BUYER_PAY`). Its id names the trade and its
    /// status, so asking again records nothing new until the status changes.
    public func message(receivedAt: Date) -> ProviderMessage {
        let effect: ProviderEffect = switch tradeStatus {
        case .tradeSuccess, .tradeFinished: .payment
        case .tradeClosed: .closed
        case .waitBuyerPay: .none
        }
        let fact = ProviderNotified(
            provider: .alipay, notificationId: "query:\(tradeNo):\(tradeStatus.rawValue)", notificationType: "alipay.trade.query",
            effect: effect, signedAt: paymentTime ?? receivedAt, transactionId: tradeNo, amount: totalAmount,
            purchasedAt: paymentTime, evidence: ["body": .string(String(decoding: rawBody, as: UTF8.self)), "source": "query"])
        return ProviderMessage(fact: fact, match: ProviderMatch(orderId: orderId, transactionIds: [tradeNo]))
    }
}

extension AlipayNotificationVerifier {
    static let queryResponseKey = "alipay_trade_query_response"

    /// Verifies and reads an `alipay.trade.query` answer for `orderId`.
    public func verifyQueryAnswer(_ body: [UInt8], orderId: String) throws(AlipayVerificationError) -> AlipayTradeQueryAnswer {
        let (document, key) = try checkQueryAnswerSignature(body)
        guard case .object(let response)? = document[key] else { throw .malformedBody }
        var parameters: [String: String] = [:]
        for (key, value) in response { if case .string(let text) = value { parameters[key] = text } }
        switch (parameters["code"], parameters["sub_code"]) {
        case ("10000", _):
            break
        case ("40004", "ACQ.TRADE_NOT_EXIST"):
            return .tradeNotFound
        case (let code, let subCode):
            throw .queryFailed(code: code ?? "", subCode: subCode ?? "", message: parameters["sub_msg"] ?? parameters["msg"] ?? "")
        }
        let found = try Self.required("out_trade_no", in: parameters)
        guard found == orderId else { throw .orderMismatch(found: found) }
        guard let totalAmount = try Self.amount("total_amount", in: parameters) else { throw .missingParameter("total_amount") }
        let status = try Self.required("trade_status", in: parameters)
        guard let tradeStatus = AlipayTradeStatus(rawValue: status) else { throw .unknownTradeStatus(status) }
        return .trade(AlipayQueriedTrade(
            orderId: found, tradeNo: try Self.required("trade_no", in: parameters), tradeStatus: tradeStatus,
            totalAmount: totalAmount, paymentTime: try Self.beijingTime("send_pay_date", in: parameters), rawBody: body))
    }

    /// `sign` over the exact text of the answer's response, with Alipay's key: the check that proves Alipay answered
    /// this, and the only one a stored answer is put to again (`verifyStoredQueryAnswer`). Returns the parsed body and
    /// the member that was signed: `alipay_trade_query_response`, or `error_response` for a refused request (a bad
    /// signature of ours, a wrong app id), signed alike.
    func checkQueryAnswerSignature(_ body: [UInt8]) throws(AlipayVerificationError) -> (document: JSONValue, key: String) {
        guard let document = try? JSONValue(parsing: body), case .string(let sign)? = document["sign"] else {
            throw .missingSignature
        }
        let key = Self.rawMember(Self.queryResponseKey, of: body) != nil ? Self.queryResponseKey : "error_response"
        guard let content = Self.rawMember(key, of: body) else { throw .missingParameter(Self.queryResponseKey) }
        guard let signature = Base64Decoding.standard(sign) else { throw .malformedSignature }
        guard publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: content), padding: .insecurePKCS1v1_5)
        else { throw .signatureInvalid }
        return (document, key)
    }

    /// The exact bytes of the value of the top-level member `key` (an object), as they appear in `body`.
    static func rawMember(_ key: String, of body: [UInt8]) -> ArraySlice<UInt8>? {
        let needle = Array("\"\(key)\"".utf8)
        guard var index = body.firstRange(of: needle)?.upperBound else { return nil }
        func skipSpace() { while index < body.count, [0x20, 0x09, 0x0A, 0x0D].contains(body[index]) { index += 1 } }
        skipSpace()
        guard index < body.count, body[index] == UInt8(ascii: ":") else { return nil }
        index += 1
        skipSpace()
        guard index < body.count, body[index] == UInt8(ascii: "{") else { return nil }
        let start = index
        var depth = 0, inString = false, escaped = false
        while index < body.count {
            let byte = body[index]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "{") {
                depth += 1
            } else if byte == UInt8(ascii: "}") {
                depth -= 1
                if depth == 0 { return body[start...index] }
            }
            index += 1
        }
        return nil
    }
}
