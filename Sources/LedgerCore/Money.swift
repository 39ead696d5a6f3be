/// An amount of money: integer minor units (cents, fen) and an ISO 4217 currency, so sums are exact and
/// amounts in different currencies are never added together by accident.
public struct Money: Sendable, Hashable, Codable {
    /// Minor units of `currency` (499 = 4.99 USD).
    public var value: Int64
    /// ISO 4217 code: three upper-case letters.
    public var currency: String

    public init(value: Int64, currency: String) {
        self.value = value
        self.currency = currency
    }

    /// The largest amount one event may name: 10^12 minor units (10 billion USD, 1 trillion JPY). Bounded so that
    /// sums stay exact: a day's revenue in one currency reaches Int64's limit only past 9 million such orders, where
    /// an unbounded amount let one event make every report of its day unanswerable for good.
    public static let maximumValue: Int64 = 1_000_000_000_000
}

/// Who took the money: the payment provider whose transaction ids the ledger records.
public enum Provider: String, Sendable, Hashable, Codable, CaseIterable {
    case appStore = "app_store"
    case alipay
    case wechatPay = "wechat_pay"
    case other
}

/// Real money or a test purchase: a sandbox receipt must never credit a production order.
public enum PurchaseEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    case production
    case sandbox
}
