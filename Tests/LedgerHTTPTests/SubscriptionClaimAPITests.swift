import Foundation
import HTTPTypes
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
import Testing

/// `POST /v1/subscriptions/{id}/claims`: an account shows one of the subscription's signed transactions (a restore,
/// a login elsewhere, a family member). Nobody owns it: the account does. Another account owns it: refused and listed
/// under `keep`, moved under `transfer`. Only what Apple signed is believed.
@Suite("HTTP: a subscription claimed by an account, under each transfer policy")
struct SubscriptionClaimAPITests {
    static let id = "2000000888000001"

    /// The subscription's first transaction, signed at `signedAt` by `ca`; `original` names its subscription.
    static func transaction(ca: ProviderTestKit.CA, signedAt: Date, original: String = id) throws -> String {
        let now = Date()
        return try ProviderTestKit.jws(payload: [
            "transactionId": original, "originalTransactionId": original, "productId": "pro.monthly",
            "bundleId": ProviderTestKit.bundleId,
            "purchaseDate": SubscriptionAPITests.milliseconds(now.addingTimeInterval(-86_400)),
            "expiresDate": SubscriptionAPITests.milliseconds(now.addingTimeInterval(29 * 86_400)), "price": 4990,
            "currency": "USD", "environment": "Production", "signedDate": SubscriptionAPITests.milliseconds(signedAt),
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
        ], ca: ca)
    }

    static func claim(_ api: API, account: String, _ jws: String, subscription: String = id) async throws -> API.Answer {
        let body: JSONValue = ["accountId": .string(account), "signedTransaction": .string(jws)]
        return try await api.request(.post, "/v1/subscriptions/\(subscription)/claims", token: "writer", body: body.canonicalJSON)
    }

    static func entitledProducts(_ api: API, account: String) async throws -> [JSONValue] {
        try await api.get("/v1/accounts/\(account)/entitlements", token: "reader").json["entitlements"]?.elements ?? []
    }

    @Test func underKeepTheFirstClaimantOwnsItAndAnotherAccountIsRefusedAndListed() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            let shown = try Self.transaction(ca: apple.ca, signedAt: Date())
            let claimed = try await Self.claim(api, account: "acct-bob", shown)
            #expect(claimed.status == .created, "\(claimed.bodyText)")
            #expect(claimed.json["outcome"] == "claimed" && claimed.json["subscription"]?["accountId"] == "acct-bob")
            #expect(claimed.json["subscription"]?["orderId"] == .null && claimed.json["subscription"]?["entitlement"]?["entitled"] == true)
            let again = try await Self.claim(api, account: "acct-bob", shown)
            #expect(again.status == .ok && again.headers[HTTPField.Name("Idempotent-Replay")!] == "true", "\(again.bodyText)")
            // The same transaction signed again later (a restore the next day): already the account's, nothing written.
            let resigned = try Self.transaction(ca: apple.ca, signedAt: Date().addingTimeInterval(60))
            let owned = try await Self.claim(api, account: "acct-bob", resigned)
            #expect(owned.status == .ok && owned.json["outcome"] == "already_owned", "\(owned.bodyText)")
            #expect(try await Self.entitledProducts(api, account: "acct-bob").count == 1)

            let versionBefore = try await api.get("/v1/subscriptions/\(Self.id)", token: "reader").json["version"]
            let refused = try await Self.claim(api, account: "acct-carol", shown)
            #expect(refused.status == .conflict && refused.errorCode == "account_mismatch", "\(refused.bodyText)")
            #expect(try await api.get("/v1/subscriptions/\(Self.id)", token: "reader").json["version"] == versionBefore)
            #expect(try await Self.entitledProducts(api, account: "acct-carol").isEmpty)
            let listed = try await api.anomalies("refused_claim")
            #expect(listed.count == 1 && listed.first?["accountId"] == "acct-bob", "\(listed)")
            guard case .string(let detail)? = listed.first?["detail"] else {
                Issue.record("\(listed)")
                return
            }
            #expect(detail.contains("account acct-carol claimed subscription \(Self.id)"), "\(detail)")
            // Refused before anything is written: a forgery, another subscription's transaction, a missing field.
            let forger = try ProviderTestKit.CA()
            let forged = try await Self.claim(api, account: "acct-carol", try Self.transaction(ca: forger, signedAt: Date()))
            #expect(forged.status == .badRequest && forged.json["error"]?["details"]?["field"] == "signedTransaction", "\(forged.bodyText)")
            let elsewhere = try Self.transaction(ca: apple.ca, signedAt: Date(), original: "2000000888000999")
            let mismatch = try await Self.claim(api, account: "acct-carol", elsewhere)
            #expect(mismatch.status == .conflict && mismatch.errorCode == "subscription_mismatch", "\(mismatch.bodyText)")
            let missing = try await api.request(
                .post, "/v1/subscriptions/\(Self.id)/claims", token: "writer", body: #"{"accountId":"acct-carol"}"#)
            #expect(missing.status == .badRequest && missing.json["error"]?["details"]?["field"] == "signedTransaction", "\(missing.bodyText)")
            #expect(try await api.get("/v1/subscriptions/\(Self.id)", token: "reader").json["version"] == versionBefore)
            #expect(try await api.anomalies("refused_claim").count == 1)
            let report = try await api.database.operations.verify()
            #expect(report.passed, "\(report)")
        }
    }

    @Test func underTransferAnotherAccountsClaimMovesItAndRecordsWhoAsked() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers, subscriptionTransfers: .transfer) { api in
            let shown = try Self.transaction(ca: apple.ca, signedAt: Date())
            #expect(try await Self.claim(api, account: "acct-bob", shown).status == .created)
            let moved = try await Self.claim(api, account: "acct-carol", shown)
            #expect(moved.status == .created && moved.json["outcome"] == "transferred" && moved.json["from"] == "acct-bob", "\(moved.bodyText)")
            #expect(moved.json["subscription"]?["accountId"] == "acct-carol")
            #expect(try await Self.entitledProducts(api, account: "acct-bob").isEmpty)
            #expect(try await Self.entitledProducts(api, account: "acct-carol").count == 1)
            let history = try await api.database.ledger.store.read(StreamName(.subscription, Self.id))
            #expect(history.map(\.type) == ["subscription.claimed", "subscription.transferred"])
            #expect(history.last?.metadata["actor"] == "writer")
            #expect(try await api.anomalies("refused_claim").isEmpty)
        }
    }
}
