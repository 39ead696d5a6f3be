import Foundation
import LedgerCore
import LedgerProviders
import LedgerTestSupport
import Testing

/// The README's subscription walkthrough, as a reader runs it: the signed messages in examples/subscriptions/, posted
/// in the README's order to a ledger that trusts only the providers file beside them, each answered as the README's
/// comments say. A message regenerated with another key, or an answer that changed, fails here before a reader sees it.
@Suite("README: a subscription walked from SUBSCRIBED to EXPIRED, with a refund")
struct SubscriptionWalkthroughTests {
    static let examples = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("examples/subscriptions")
    static let id = "2000000900000001"

    static func file(_ name: String) throws -> String {
        try String(contentsOf: examples.appendingPathComponent(name), encoding: .utf8)
    }

    static func notify(_ api: API, _ name: String) async throws -> API.Answer {
        try await api.request(.post, "/v1/providers/app-store/notifications", token: nil, body: try file(name))
    }

    @Test func theREADMEWalkthroughAnswersWhatItsCommentsSay() async throws {
        let verifiers = try ProviderVerifiers.load(configurationFile: Self.examples.appendingPathComponent("providers.json").path)
        try await API.run(providers: verifiers) { api in
            let subscription = "/v1/subscriptions/\(Self.id)"
            let subscribed = try await Self.notify(api, "1-subscribed.json")
            #expect(subscribed.status == .ok && subscribed.json["subscription"]?["outcome"] == "recorded", "\(subscribed.bodyText)")
            let january = try await api.get(subscription + "?asOf=2026-01-20T00:00:00Z", token: "reader")
            #expect(january.json["entitlement"]?["state"] == "active", "\(january.bodyText)")
            #expect(january.json["entitlement"]?["until"] == "2026-02-05T10:00:00.000000Z" && january.json["accountId"] == .null)

            let claim = try await api.request(.post, subscription + "/claims", token: "writer", body: try Self.file("2-claim.json"))
            #expect(claim.status == .created && claim.json["outcome"] == "claimed", "\(claim.bodyText)")
            #expect(claim.json["subscription"]?["accountId"] == "acct-walk")

            #expect(try await Self.notify(api, "3-did-renew.json").json["subscription"]?["outcome"] == "recorded")
            let entitlements = try await api.get("/v1/accounts/acct-walk/entitlements?asOf=2026-02-08T00:00:00Z", token: "reader")
            let entitled = entitlements.json["entitlements"]?.elements ?? []
            #expect(entitled.count == 1 && entitled.first?["productId"] == "pro.monthly", "\(entitlements.bodyText)")
            #expect(entitled.first?["until"] == "2026-03-05T10:00:00.000000Z")
            #expect(entitled.first?["transaction"]?["transactionId"] == "2000000900000002")
            #expect(entitled.first?["transaction"]?["price"]?["text"] == "4.99 USD")

            #expect(try await Self.notify(api, "4-auto-renew-off.json").json["subscription"]?["outcome"] == "recorded")
            #expect(try await api.get(subscription, token: "reader").json["renewal"]?["autoRenew"] == false)

            #expect(try await Self.notify(api, "5-refund.json").json["subscription"]?["outcome"] == "recorded")
            let refunded = try await api.get(subscription + "?asOf=2026-02-15T00:00:00Z", token: "reader")
            let first = refunded.json["transactions"]?.elements.first { $0["transactionId"] == .string(Self.id) }
            #expect(first?["revocation"]?["kind"] == "refund_full", "\(refunded.bodyText)")
            #expect(refunded.json["entitlement"]?["state"] == "active" && refunded.json["entitlement"]?["until"] == "2026-03-05T10:00:00.000000Z")

            #expect(try await Self.notify(api, "6-expired.json").json["subscription"]?["outcome"] == "recorded")
            let now = try await api.get(subscription, token: "reader")
            #expect(now.json["entitlement"]?["state"] == "expired" && now.json["entitlement"]?["entitled"] == false, "\(now.bodyText)")

            let report = try await api.get("/v1/reports/subscriptions?from=2026-01-01&to=2026-03-31", token: "finance")
            let rows = report.json["rows"]?.elements ?? []
            func total(_ column: (JSONValue) -> JSONValue?) -> Int64 {
                rows.reduce(0) { sum, row in if case .int(let value)? = column(row) { sum + value } else { sum } }
            }
            #expect(total { $0["started"] } == 1 && total { $0["renewed"] } == 1, "\(report.bodyText)")
            #expect(total { $0["refunds"] } == 1 && total { $0["churned"]?["voluntary"] } == 1)

            // Posted again: duplicates, nothing changes.
            #expect(try await Self.notify(api, "3-did-renew.json").json["subscription"]?["outcome"] == "duplicate")
        }
    }
}
