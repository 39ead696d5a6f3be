import Foundation
import LedgerCore

/// WeChat Pay's answer to the order query (`GET /v3/pay/transactions/out-trade-no/{out_trade_no}?mchid=`), verified:
/// signed like a notification (`Wechatpay-Signature` over `timestamp\nnonce\nbody\n`), its body the payment itself, in
/// the clear (no encrypted resource).
public enum WeChatPayQueryAnswer: Sendable, Hashable {
    case trade(WeChatPayQueriedTrade)
    /// 404 `ORDER_NOT_EXIST`: WeChat Pay knows no order of that id (never placed, or not yet).
    case orderNotFound
}

public struct WeChatPayQueriedTrade: Sendable, Hashable {
    public var orderId: String
    /// Absent until the user has paid (`NOTPAY`, `USERPAYING`).
    public var transactionId: String?
    public var tradeState: WeChatPayTradeState
    public var amount: Money
    public var successTime: Date?
    public var headers: WeChatPayHeaders
    public var rawBody: [UInt8]

    /// The fact this answer records, as a notification's would: `SUCCESS` a payment, `CLOSED` / `REVOKED` a closed
    /// unpaid trade. `REFUND` ("转入退款") says the trade was paid and a refund of it began — of part of it or all, the
    /// query does not say, nor whether it succeeded — so it records the payment, never a refund: the refund is
    /// recorded from WeChat Pay's refund notification (`REFUND.SUCCESS`), which carries its amount. (It was taken as a
    /// full refund with no payment fact: a partial refund of a paid, lost order ended it refunded and uncredited.)
    /// Nil when there is nothing to record yet: no transaction (`NOTPAY`, `USERPAYING`), or a failed payment
    /// (`PAYERROR`). Its id names the transaction and the state, so asking again records nothing new until the state
    /// changes.
    public func message(receivedAt: Date) -> ProviderMessage? {
        guard let transactionId else { return nil }
        let effect: ProviderEffect
        switch tradeState {
        case .success, .refund: effect = .payment
        case .closed, .revoked: effect = .closed
        case .notPay, .userPaying, .payError: return nil
        }
        let evidence: JSONValue = [
            "body": .string(String(decoding: rawBody, as: UTF8.self)), "source": "query",
            "timestamp": .string(headers.timestamp), "nonce": .string(headers.nonce),
            "serial": .string(headers.serial), "signature": .string(headers.signature),
        ]
        let fact = ProviderNotified(
            provider: .wechatPay, notificationId: "query:\(transactionId):\(tradeState.rawValue)",
            notificationType: "QUERY.\(tradeState.rawValue)", effect: effect, signedAt: successTime ?? receivedAt,
            transactionId: transactionId, amount: effect == .payment ? amount : nil,
            purchasedAt: effect == .payment ? successTime : nil, evidence: evidence)
        return ProviderMessage(fact: fact, match: ProviderMatch(orderId: orderId, transactionIds: [transactionId]))
    }
}

extension WeChatPayNotificationVerifier {
    /// Verifies an order query's answer (HTTP `status`, its `Wechatpay-*` headers, its body) for `orderId`.
    public func verifyQueryAnswer(
        status: Int, headers: WeChatPayHeaders?, body: [UInt8], orderId: String, now: Date
    ) throws(WeChatPayVerificationError) -> WeChatPayQueryAnswer {
        guard let headers else {
            guard (400..<500).contains(status) else { throw .unsignedAnswer }
            let (code, message) = Self.errorWords(body)
            throw .unsignedRefusal(status: status, code: code, message: message)
        }
        try checkSignature(headers: headers, body: body, now: now)
        guard status == 200 else {
            let (code, message) = Self.errorWords(body)
            if status == 404, code == "ORDER_NOT_EXIST" { return .orderNotFound }
            throw .queryFailed(status: status, code: code, message: message)
        }
        let wire = try Self.decode(WeChatPayWire.QueriedPayment.self, from: body)
        guard wire.mchid == merchantId else { throw .merchantIdMismatch(found: wire.mchid) }
        guard wire.out_trade_no == orderId else { throw .orderMismatch(found: wire.out_trade_no) }
        guard let state = WeChatPayTradeState(rawValue: wire.trade_state) else { throw .unknownState(wire.trade_state) }
        return .trade(WeChatPayQueriedTrade(
            orderId: wire.out_trade_no, transactionId: wire.transaction_id, tradeState: state,
            amount: Money(value: wire.amount.total, currency: wire.amount.currency ?? "CNY"),
            successTime: try Self.time(wire.success_time, field: "success_time"), headers: headers, rawBody: body))
    }
}

extension WeChatPayNotificationVerifier {
    /// An error answer's `code` and `message` (empty when the body has none).
    static func errorWords(_ body: [UInt8]) -> (code: String, message: String) {
        let error = try? JSONValue(parsing: body)
        let code: String = if case .string(let text)? = error?["code"] { text } else { "" }
        let message: String = if case .string(let text)? = error?["message"] { text } else { "" }
        return (code, message)
    }
}

extension WeChatPayWire {
    /// The order query's body: the payment as a notification's resource holds it, but `transaction_id` is absent
    /// before payment and `amount.currency` may be.
    struct QueriedPayment: Decodable {
        struct Amount: Decodable {
            var total: Int64
            var currency: String?
        }
        var mchid: String
        var out_trade_no: String
        var transaction_id: String?
        var trade_state: String
        var amount: Amount
        var success_time: String?
    }
}
