import Foundation

extension SubscriptionTransaction {
    /// How many periods like this one make a year — 52 (a week), 12 (a month), 6 (two months), 4 (three), 2 (six)
    /// or 1 (a year), Apple's durations — taken as the nearest to its length: the monthly revenue of a subscription
    /// (MRR) is its price × this ÷ 12. A period lengthened by a renewal extension reads as the longer one.
    public var periodsPerYear: Int {
        let days = expiresAt.timeIntervalSince(purchasedAt) / 86_400
        return switch days {
        case ..<10: 52
        case ..<45: 12
        case ..<75: 6
        case ..<135: 4
        case ..<270: 2
        default: 1
        }
    }

    /// What a refund of this period gave back: the whole price (`refund_full`, or a prorated refund that states no
    /// percentage), or its prorated part (`percentage` thousandths of a percent of the price, rounded half up to a
    /// minor unit). Nil when it was not refunded (a family-sharing revocation or an upgrade moves no money back) or
    /// states no price.
    public var refunded: Money? {
        guard let price, let revocation, revocation.kind == .refundFull || revocation.kind == .refundProrated else { return nil }
        guard revocation.kind == .refundProrated, let percentage = revocation.percentage else { return price }
        let whole = price.value / 100_000, rest = price.value % 100_000
        let (part, overflow) = (whole * percentage).addingReportingOverflow((rest * percentage + 50_000) / 100_000)
        return overflow ? price : Money(value: part, currency: price.currency)
    }
}
