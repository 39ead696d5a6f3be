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
    /// `total_amount`, in `trans_currency` when Alipay names one (a cross-border trade), else in CNY.
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
    static let errorResponseKey = "error_response"

    /// Verifies and reads an `alipay.trade.query` answer for `orderId`.
    public func verifyQueryAnswer(_ body: [UInt8], orderId: String) throws(AlipayVerificationError) -> AlipayTradeQueryAnswer {
        let response = try checkQueryAnswerSignature(body)
        var parameters: [String: String] = [:]
        for (key, value) in response.members { if case .string(let text) = value { parameters[key] = text } }
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
        guard let totalAmount = try Self.amount("total_amount", in: parameters, currency: try Self.currency(in: parameters)) else {
            throw .missingParameter("total_amount")
        }
        let status = try Self.required("trade_status", in: parameters)
        guard let tradeStatus = AlipayTradeStatus(rawValue: status) else { throw .unknownTradeStatus(status) }
        return .trade(AlipayQueriedTrade(
            orderId: found, tradeNo: try Self.required("trade_no", in: parameters), tradeStatus: tradeStatus,
            totalAmount: totalAmount, paymentTime: try Self.beijingTime("send_pay_date", in: parameters), rawBody: body))
    }

    /// The response Alipay signed, and only if it did: the top-level member `alipay_trade_query_response` (or
    /// `error_response`, for a refused request: a bad signature of ours, a wrong app id, signed alike), found by
    /// walking the top-level object, never by searching the text (a signed answer nested under another key once
    /// vouched for an unsigned one beside it). `sign` must hold over exactly that member's bytes, and what is returned
    /// is the value parsed from exactly those bytes: what is verified is what is read. A top-level name given twice is
    /// refused (which one was signed, which one read, would be a guess). The check that proves Alipay answered this,
    /// and the only one a stored answer is put to again (`verifyStoredQueryAnswer`).
    func checkQueryAnswerSignature(_ body: [UInt8]) throws(AlipayVerificationError) -> (key: String, members: [String: JSONValue]) {
        guard let members = try? JSONValue.members(parsingObject: body) else { throw .malformedBody }
        var names: [String] = []
        for member in members {
            guard !names.contains(member.name) else { throw .duplicateParameter(member.name) }
            names.append(member.name)
        }
        guard let signed = members.first(where: { $0.name == Self.queryResponseKey }) ?? members.first(where: { $0.name == Self.errorResponseKey })
        else { throw .missingParameter(Self.queryResponseKey) }
        guard case .object(let response) = signed.value else { throw .malformedBody }
        guard case .string(let sign)? = members.first(where: { $0.name == "sign" })?.value else {
            let words = { (name: String) -> String in if case .string(let text)? = response[name] { text } else { "" } }
            guard let code = response["code"], code != .string("10000") else { throw .missingSignature }
            throw .unsignedRefusal(code: words("code"), subCode: words("sub_code"), message: words("sub_msg").isEmpty ? words("msg") : words("sub_msg"))
        }
        guard let signature = Base64Decoding.standard(sign) else { throw .malformedSignature }
        guard publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: body[signed.bytes]),
            padding: .insecurePKCS1v1_5)
        else { throw .signatureInvalid }
        return (signed.name, response)
    }
}
