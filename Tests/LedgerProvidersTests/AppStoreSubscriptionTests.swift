import Foundation
import LedgerCore
import LedgerProviders
import ProviderTestSupport
import Testing

/// A signed App Store notification about an auto-renewable subscription, verified against the tests' CA, is the
/// subscription's event with Apple's signed facts normalized (docs/domain.md, "Subscriptions").
@Suite("App Store: a subscription's notifications as its events")
struct AppStoreSubscriptionTests {
    typealias Kit = ProviderTestKit
    let ca: ProviderTestKit.CA
    init() throws { ca = try ProviderTestKit.CA() }

    func renewal(_ extra: [String: Any]) throws -> String {
        try Kit.jws(payload: Kit.renewalPayload().merging(extra) { $1 }, ca: ca)
    }

    func subscriptionTransaction(_ extra: [String: Any]) throws -> String {
        var payload = Kit.transactionPayload().merging([
            "type": "Auto-Renewable Subscription", "productId": "com.example.monthly", "webOrderLineItemId": "2000000011",
            "expiresDate": Kit.milliseconds(Kit.now.addingTimeInterval(30 * 86_400)),
        ]) { $1 }
        payload.merge(extra) { $1 }
        return try Kit.jws(payload: payload, ca: ca)
    }

    func event(_ type: String, subtype: String?, transaction: String?, renewal: String?) async throws
        -> (subscriptionId: String, event: SubscriptionEvent)?
    {
        var payload = Kit.notificationPayload(type: type, signedTransactionInfo: transaction, signedRenewalInfo: renewal)
        payload["subtype"] = subtype
        let notification = try await Kit.verifier(trusting: ca).verifyNotification(try Kit.jws(payload: payload, ca: ca), now: Kit.now)
        return notification.subscriptionEvent
    }

    @Test func aRenewalWithItsGracePeriodAndAProratedRefundAreNormalized() async throws {
        let graceEnds = Kit.now.addingTimeInterval(16 * 86_400)
        let failed = try #require(try await event(
            "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", transaction: try subscriptionTransaction([:]),
            renewal: try renewal([
                "isInBillingRetryPeriod": true, "expirationIntent": 2, "gracePeriodExpiresDate": Kit.milliseconds(graceEnds),
                "priceIncreaseStatus": 0,
            ])))
        #expect(failed.subscriptionId == "2000000123456700")
        guard case .provider(let type, let said) = failed.event else { Issue.record("\(failed.event)"); return }
        #expect(type == .renewalFailed && said.subtype == "GRACE_PERIOD")
        #expect(said.notificationId == "5d2b3a1e-0000-4000-8000-000000000001")
        let transaction = try #require(said.transaction)
        #expect(transaction.transactionId == "2000000123456789" && transaction.webOrderLineItemId == "2000000011")
        #expect(transaction.price == Money(value: 999, currency: "USD"))  // 9990 milliunits
        #expect(transaction.expiresAt == Date(timeIntervalSince1970: TimeInterval(Kit.milliseconds(Kit.now.addingTimeInterval(30 * 86_400))) / 1000))
        #expect(!transaction.familyShared && transaction.revocation == nil)
        let info = try #require(said.renewalInfo)
        #expect(info.autoRenew && info.inBillingRetry && info.expirationIntent == .billingError && info.priceIncrease == .pending)
        #expect(info.gracePeriodExpiresAt == Date(timeIntervalSince1970: TimeInterval(Kit.milliseconds(graceEnds)) / 1000))
        // What the notification says is what the subscription's event records: it reads back from its stored data.
        #expect(try SubscriptionEvent(type: failed.event.type.rawValue, data: failed.event.data) == failed.event)

        let refunded = try #require(try await event(
            "REFUND", subtype: nil,
            transaction: try subscriptionTransaction([
                "revocationDate": Kit.milliseconds(Kit.now), "revocationReason": 0, "revocationType": "REFUND_PRORATED",
                "revocationPercentage": 25_000, "inAppOwnershipType": "FAMILY_SHARED",
            ]),
            renewal: nil))
        guard case .provider(.refunded, let refund) = refunded.event else { Issue.record("\(refunded.event)"); return }
        #expect(refund.transaction?.revocation?.kind == .refundProrated && refund.transaction?.revocation?.percentage == 25_000)
        #expect(refund.transaction?.familyShared == true)
    }

    @Test func aOneTimePurchaseOrANotificationThatSaysNothingOfAStateIsNoSubscriptionEvent() async throws {
        let consumable = try Kit.jws(payload: Kit.transactionPayload(), ca: ca)
        #expect(try await event("REFUND", subtype: nil, transaction: consumable, renewal: nil) == nil)
        #expect(try await event("CONSUMPTION_REQUEST", subtype: nil, transaction: try subscriptionTransaction([:]), renewal: nil) == nil)
        // Renewal info alone (an auto-renew change) names its subscription.
        let changed = try await event("DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: nil,
                                      renewal: try renewal(["autoRenewStatus": 0]))
        #expect(changed?.subscriptionId == "2000000123456700")
        #expect(changed?.event.type == .autoRenewChanged)
    }
}
