import Foundation
import LedgerCore

/// A year of a monthly subscription, as the App Store would notify it: bought on 1 January, renewed monthly; the
/// April renewal fails, a 15-day grace period runs, and billing recovers on 10 April; an upgrade on 1 July; the
/// November period is refunded half on 15 November, and auto-renew is then off.
public enum SubscriptionYear {
    public static let id = "2000000100"

    public static func day(_ month: Int, _ day: Int, _ hour: Int = 0) -> Date {
        var components = DateComponents(year: 2026, month: month, day: day, hour: hour)
        components.timeZone = TimeZone(identifier: "UTC")
        return Calendar(identifier: .gregorian).date(from: components) ?? Date(timeIntervalSince1970: 0)
    }

    public static func transaction(
        _ transactionId: String, product: String = "pro.monthly", from purchasedAt: Date, to expiresAt: Date,
        revocation: Revocation? = nil, signedAt: Date? = nil, familyShared: Bool = false
    ) -> SubscriptionTransaction {
        SubscriptionTransaction(
            transactionId: transactionId, originalTransactionId: id, webOrderLineItemId: "w" + transactionId,
            productId: product, purchasedAt: purchasedAt, expiresAt: expiresAt,
            price: Money(value: product == "pro.monthly" ? 499 : 999, currency: "USD"), revocation: revocation,
            familyShared: familyShared, signedAt: signedAt ?? purchasedAt.addingTimeInterval(60))
    }

    public static func renewal(
        autoRenew: Bool = true, retrying: Bool = false, graceUntil: Date? = nil, renewsTo: String? = nil, signedAt: Date
    ) -> SubscriptionRenewalInfo {
        SubscriptionRenewalInfo(
            autoRenew: autoRenew, renewsTo: renewsTo, expirationIntent: retrying ? .billingError : nil,
            inBillingRetry: retrying, gracePeriodExpiresAt: graceUntil, signedAt: signedAt)
    }

    public static func notification(
        _ type: String, _ subtype: String? = nil, signedAt: Date, transaction: SubscriptionTransaction? = nil,
        renewal: SubscriptionRenewalInfo? = nil
    ) -> SubscriptionEvent {
        let said = ProviderSaid(
            notificationId: "n-\(type)-\(Int(signedAt.timeIntervalSince1970))", subtype: subtype, signedAt: signedAt,
            transaction: transaction, renewalInfo: renewal)
        guard let eventType = SubscriptionEventType.of(notificationType: type, subtype: subtype) else {
            return .provider(.renewed, said)  // every type used below has an event
        }
        return .provider(eventType, said)
    }

    /// The notifications, in the order Apple sent them.
    public static let notifications: [SubscriptionEvent] = {
        var events: [SubscriptionEvent] = []
        events.append(notification(
            "SUBSCRIBED", "INITIAL_BUY", signedAt: day(1, 1, 1), transaction: transaction("t01", from: day(1, 1), to: day(2, 1)),
            renewal: renewal(signedAt: day(1, 1, 1))))
        events.append(notification("DID_RENEW", signedAt: day(2, 1, 1), transaction: transaction("t02", from: day(2, 1), to: day(3, 1))))
        events.append(notification("DID_RENEW", signedAt: day(3, 1, 1), transaction: transaction("t03", from: day(3, 1), to: day(4, 1))))
        // 1 April: the renewal fails; the grace period runs to 16 April.
        events.append(notification(
            "DID_FAIL_TO_RENEW", "GRACE_PERIOD", signedAt: day(4, 1, 1),
            renewal: renewal(retrying: true, graceUntil: day(4, 16), signedAt: day(4, 1, 1))))
        events.append(notification(
            "DID_RENEW", "BILLING_RECOVERY", signedAt: day(4, 10, 1), transaction: transaction("t04", from: day(4, 10), to: day(5, 10)),
            renewal: renewal(signedAt: day(4, 10, 1))))
        events.append(notification("DID_RENEW", signedAt: day(5, 10, 1), transaction: transaction("t05", from: day(5, 10), to: day(6, 10))))
        events.append(notification("DID_RENEW", signedAt: day(6, 10, 1), transaction: transaction("t06", from: day(6, 10), to: day(7, 10))))
        events.append(notification(
            "DID_CHANGE_RENEWAL_PREF", "UPGRADE", signedAt: day(7, 1, 1),
            transaction: transaction("t07", product: "pro.premium", from: day(7, 1), to: day(8, 1)),
            renewal: renewal(renewsTo: "pro.premium", signedAt: day(7, 1, 1))))
        for month in 8...11 {
            events.append(notification(
                "DID_RENEW", signedAt: day(month, 1, 1),
                transaction: transaction("t\(month < 10 ? "0" : "")\(month)", product: "pro.premium", from: day(month, 1), to: day(month + 1, 1))))
        }
        events.append(notification(
            "REFUND", signedAt: day(11, 15, 1),
            transaction: transaction(
                "t11", product: "pro.premium", from: day(11, 1), to: day(12, 1),
                revocation: Revocation(at: day(11, 15), kind: .refundProrated, percentage: 50_000), signedAt: day(11, 15, 1)),
            renewal: renewal(autoRenew: false, signedAt: day(11, 15, 1))))
        return events
    }()

    /// Written by hand from the story above: the entitlement at each moment.
    public static let table: [(moment: Date, state: Entitlement.State, until: Date?, proof: String?)] = [
        (day(1, 15), .active, day(2, 1), "t01"),
        (day(3, 15), .active, day(4, 1), "t03"),
        (day(4, 1, 12), .inGrace, day(4, 16), "t03"),
        (day(4, 5), .inGrace, day(4, 16), "t03"),
        (day(4, 12), .active, day(5, 10), "t04"),
        (day(7, 5), .active, day(8, 1), "t07"),
        (day(11, 10), .active, day(12, 1), "t11"),
        (day(11, 20), .refunded, nil, "t11"),
        (day(12, 5), .refunded, nil, "t11"),
    ]

    public static func fold(_ events: [SubscriptionEvent]) -> Subscription? {
        var state: Subscription?
        for (index, event) in events.enumerated() {
            state = Subscription.evolve(state, event, stream: id, version: index + 1, recordedAt: day(12, 31))
        }
        return state
    }
}
