import Foundation
import HTTPTypes
import LedgerCore
import LedgerTestSupport
import ProviderTestSupport
import Testing

/// An auto-renewable subscription's notification, signed by the tests' CA and posted as Apple posts it, is recorded
/// on its subscription, linked to the order of its first purchase, and answers "is this account entitled now?".
@Suite("HTTP: subscriptions and an account's entitlements")
struct SubscriptionAPITests {
    static func milliseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1000) }

    @Test func aSignedSubscriptionIsRecordedLinkedAndAnswersItsAccountsEntitlements() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            let id = "2000000777000001"
            var lifecycle = Lifecycle()
            lifecycle.accountId = "acct-sub"
            lifecycle.transactionId = id
            for event in [lifecycle.created, lifecycle.receipt] {
                #expect(try await api.post("sub-order", event).status == .created)
            }
            let now = Date()
            let transaction = try ProviderTestKit.jws(payload: [
                "transactionId": id, "originalTransactionId": id, "productId": "pro.monthly",
                "bundleId": ProviderTestKit.bundleId, "purchaseDate": Self.milliseconds(now.addingTimeInterval(-86_400)),
                "expiresDate": Self.milliseconds(now.addingTimeInterval(29 * 86_400)), "price": 4990, "currency": "USD",
                "environment": "Production", "signedDate": Self.milliseconds(now), "type": "Auto-Renewable Subscription",
                "webOrderLineItemId": "2000000777", "inAppOwnershipType": "PURCHASED",
            ], ca: apple.ca)
            let renewal = try ProviderTestKit.jws(payload: [
                "originalTransactionId": id, "autoRenewProductId": "pro.monthly", "productId": "pro.monthly",
                "autoRenewStatus": 1, "environment": "Production", "signedDate": Self.milliseconds(now),
            ], ca: apple.ca)
            var payload = ProviderTestKit.notificationPayload(
                type: "SUBSCRIBED", signedTransactionInfo: transaction, signedRenewalInfo: renewal, signedDate: now)
            payload["subtype"] = "INITIAL_BUY"
            let body: JSONValue = ["signedPayload": .string(try ProviderTestKit.jws(payload: payload, ca: apple.ca))]

            let posted = try await api.request(.post, "/v1/providers/app-store/notifications", token: nil, body: body.canonicalJSON)
            #expect(posted.status == .ok, "\(posted.bodyText)")
            #expect(posted.json["subscription"]?["outcome"] == "recorded", "\(posted.bodyText)")
            let again = try await api.request(.post, "/v1/providers/app-store/notifications", token: nil, body: body.canonicalJSON)
            #expect(again.json["subscription"]?["outcome"] == "duplicate", "\(again.bodyText)")

            let subscription = try await api.get("/v1/subscriptions/\(id)", token: "reader")
            #expect(subscription.status == .ok, "\(subscription.bodyText)")
            #expect(subscription.json["accountId"] == "acct-sub" && subscription.json["orderId"] == "sub-order")
            #expect(subscription.json["entitlement"]?["state"] == "active" && subscription.json["entitlement"]?["entitled"] == true)
            #expect(subscription.json["renewal"]?["autoRenew"] == true)
            guard case .array(let transactions)? = subscription.json["transactions"] else {
                Issue.record("\(subscription.bodyText)")
                return
            }
            #expect(transactions.count == 1 && transactions.first?["price"]?["text"] == "4.99 USD")

            let entitlements = try await api.get("/v1/accounts/acct-sub/entitlements", token: "reader")
            guard case .array(let entitled)? = entitlements.json["entitlements"] else {
                Issue.record("\(entitlements.bodyText)")
                return
            }
            #expect(entitled.count == 1 && entitled.first?["productId"] == "pro.monthly", "\(entitlements.bodyText)")
            #expect(entitled.first?["transaction"]?["transactionId"] == .string(id))
            // Before the purchase, nothing; another account, nothing; a subscription never seen, a 404.
            let before = RFC3339.format(now.addingTimeInterval(-2 * 86_400))
            let earlier = try await api.get("/v1/accounts/acct-sub/entitlements?asOf=\(before)", token: "reader")
            #expect(earlier.json["entitlements"] == .array([]), "\(earlier.bodyText)")
            #expect(try await api.get("/v1/accounts/someone-else/entitlements", token: "reader").json["entitlements"] == .array([]))
            let unknown = try await api.get("/v1/subscriptions/2000000000000000", token: "reader")
            #expect(unknown.status == .notFound && unknown.errorCode == "not_found")
            #expect(try await api.get("/v1/subscriptions/\(id)", token: "writer").status == .forbidden)

            // Finance sees it in the subscription report: active today, its month's price as MRR (4,990 milliunits).
            let today = String(RFC3339.format(now).prefix(10))
            let report = try await api.get("/v1/reports/subscriptions?from=\(today)&to=\(today)", token: "finance")
            #expect(report.status == .ok, "\(report.bodyText)")
            let rows = report.json["rows"]?.elements ?? []
            #expect(rows.count == 1 && rows.first?["active"] == 1 && rows.first?["mrr"] == 499, "\(report.bodyText)")
            #expect(try await api.get("/v1/reports/subscriptions?from=\(today)&to=\(today)", token: "reader").status == .forbidden)
            let badZone = try await api.get("/v1/reports/subscriptions?from=\(today)&to=\(today)&timezone=Mars/Olympus", token: "finance")
            #expect(badZone.status == .badRequest && badZone.json["error"]?["details"]?["field"] == "timezone", "\(badZone.bodyText)")
        }
    }
}
