import Foundation
import LedgerCore

/// An Alipay trade's status as an asynchronous notification reports it. Closed set: a status the ledger does
/// not know is refused rather than guessed at.
public enum AlipayTradeStatus: String, Sendable, Hashable, CaseIterable {
    case waitBuyerPay = "WAIT_BUYER_PAY"
    case tradeSuccess = "TRADE_SUCCESS"
    case tradeFinished = "TRADE_FINISHED"
    case tradeClosed = "TRADE_CLOSED"
}

/// A verified Alipay asynchronous notification (`trade_status_sync`): its signature held with the configured
/// key and it names the configured app. Amounts are integer minor units of the trade's currency (`trans_currency`
/// for a cross-border trade, else CNY: fen); `parameters` keeps every decoded
/// parameter (also `sign`) as received, and `rawBody` the body verbatim, for the ledger's records.
public struct AlipayNotification: Sendable, Hashable {
    /// `out_trade_no`: the ledger's order id, as sent in the payment request.
    public var orderId: String
    /// `trade_no`: Alipay's transaction id.
    public var tradeNo: String
    public var tradeStatus: AlipayTradeStatus
    /// `total_amount`: in `trans_currency` when Alipay names one, else in CNY (fen).
    public var totalAmount: Money
    /// `refund_fee` (total refunded so far), in the same currency as `totalAmount`, when present.
    public var refundFee: Money?
    public var notifyId: String
    public var appId: String
    /// `gmt_payment` (Beijing time, UTC+8), when present.
    public var paymentTime: Date?
    /// `gmt_refund` (Beijing time, UTC+8), when present.
    public var refundTime: Date?
    public var parameters: [String: String]
    public var rawBody: [UInt8]
}
