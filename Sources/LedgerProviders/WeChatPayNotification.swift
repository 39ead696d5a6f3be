import Foundation
import LedgerCore

/// The four `Wechatpay-*` headers of a notification, as the HTTP layer read them.
public struct WeChatPayHeaders: Sendable, Hashable {
    public var timestamp: String
    public var nonce: String
    public var signature: String
    public var serial: String

    public init(timestamp: String, nonce: String, signature: String, serial: String) {
        self.timestamp = timestamp
        self.nonce = nonce
        self.signature = signature
        self.serial = serial
    }
}

/// A payment's state (`trade_state`). Closed set: an unknown state is refused, not guessed at.
public enum WeChatPayTradeState: String, Sendable, Hashable, CaseIterable {
    case success = "SUCCESS", refund = "REFUND", notPay = "NOTPAY", closed = "CLOSED"
    case revoked = "REVOKED", userPaying = "USERPAYING", payError = "PAYERROR"
}

/// A refund's state (`refund_status`). Closed set, as ``WeChatPayTradeState``.
public enum WeChatPayRefundStatus: String, Sendable, Hashable, CaseIterable {
    case success = "SUCCESS", closed = "CLOSED", processing = "PROCESSING", abnormal = "ABNORMAL"
}

/// A verified, decrypted WeChat Pay API v3 notification: signed by the platform key its serial names, fresh,
/// its resource authentic under the APIv3 key, for the configured merchant. `rawBody` is kept verbatim.
public struct WeChatPayNotification: Sendable, Hashable {
    public var id: String
    /// `TRANSACTION.SUCCESS`, `REFUND.SUCCESS`, `REFUND.ABNORMAL`, `REFUND.CLOSED`, ...
    public var eventType: String
    public var createTime: Date?
    public var summary: String?
    public var resource: Resource
    public var rawBody: [UInt8]

    public enum Resource: Sendable, Hashable {
        case payment(WeChatPayPayment)
        case refund(WeChatPayRefund)
    }
}

/// A payment resource (`TRANSACTION.*`). `amount` is `amount.total` in fen of `amount.currency`.
public struct WeChatPayPayment: Sendable, Hashable {
    public var mchid: String
    public var appid: String
    /// `out_trade_no`: the ledger's order id.
    public var orderId: String
    public var transactionId: String
    public var tradeState: WeChatPayTradeState
    public var amount: Money
    public var successTime: Date?
}

/// A refund resource (`REFUND.*`). Amounts in fen, CNY (refund notifications carry no currency).
public struct WeChatPayRefund: Sendable, Hashable {
    public var mchid: String
    /// `out_trade_no`: the ledger's order id.
    public var orderId: String
    public var transactionId: String
    public var outRefundNo: String
    public var refundId: String
    public var refundStatus: WeChatPayRefundStatus
    /// `amount.refund`.
    public var refund: Money
    /// `amount.total`: the original payment.
    public var total: Money
    public var successTime: Date?
}

/// The JSON shapes as WeChat Pay sends them.
enum WeChatPayWire {
    struct Envelope: Decodable {
        var id: String
        var create_time: String?
        var event_type: String
        var resource_type: String?
        var summary: String?
        var resource: EncryptedResource
    }

    struct EncryptedResource: Decodable {
        var algorithm: String
        var ciphertext: String
        var nonce: String
        var associated_data: String?
        var original_type: String?
    }

    struct Payment: Decodable {
        struct Amount: Decodable {
            var total: Int64
            var currency: String
        }
        var mchid: String
        var appid: String
        var out_trade_no: String
        var transaction_id: String
        var trade_state: String
        var amount: Amount
        var success_time: String?
    }

    struct Refund: Decodable {
        struct Amount: Decodable {
            var total: Int64
            var refund: Int64
        }
        var mchid: String
        var out_trade_no: String
        var transaction_id: String
        var out_refund_no: String
        var refund_id: String
        var refund_status: String
        var amount: Amount
        var success_time: String?
    }
}
