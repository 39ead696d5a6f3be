import Foundation
import HTTPTypes
import LedgerCore
import LedgerTestSupport
import ProviderTestSupport
import Testing

/// `POST /v1/subscriptions/{id}/grants`: the backend says which periods it credited, each once, to the owner; finance
/// lists a paid period nobody credited (`renewal_not_credited`) and one credited after it ended
/// (`access_after_expiry`).
@Suite("HTTP: a subscription's periods credited once, and those never or too late credited listed")
struct SubscriptionGrantAPITests {
    static let id = "2000000999000001"

    /// A period of the subscription, `days` from now to `days + 30`, signed `signedLater` seconds from now.
    static func period(_ transactionId: String, days: Double, ca: ProviderTestKit.CA, signedLater: Double = 0) throws -> String {
        let start = Date().addingTimeInterval(days * 86_400)
        return try ProviderTestKit.jws(payload: [
            "transactionId": transactionId, "originalTransactionId": id, "productId": "pro.monthly",
            "bundleId": ProviderTestKit.bundleId, "purchaseDate": SubscriptionAPITests.milliseconds(start),
            "expiresDate": SubscriptionAPITests.milliseconds(start.addingTimeInterval(30 * 86_400)), "price": 4990,
            "currency": "USD", "environment": "Production",
            "signedDate": SubscriptionAPITests.milliseconds(Date().addingTimeInterval(signedLater)),
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
        ], ca: ca)
    }

    static func post(_ api: API, _ what: String, account: String, _ jws: String) async throws -> API.Answer {
        let body: JSONValue = ["accountId": .string(account), "signedTransaction": .string(jws)]
        return try await api.request(.post, "/v1/subscriptions/\(id)/\(what)", token: "writer", body: body.canonicalJSON)
    }

    static func listed(_ api: API, _ kind: String) async throws -> [String] {
        try await api.anomalies(kind).compactMap { anomaly in
            guard case .string(let detail)? = anomaly["detail"] else { return nil }
            return detail
        }
    }

    @Test func eachPeriodIsCreditedOnceByItsOwnerAndTheUncreditedAndTheLateAreListed() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            let first = try Self.period(Self.id, days: -31, ca: apple.ca)
            let renewal = try Self.period("2000000999000002", days: -1, ca: apple.ca)
            #expect(try await Self.post(api, "claims", account: "acct-bob", first).status == .created)
            let notOwner = try await Self.post(api, "grants", account: "acct-carol", renewal)
            #expect(notOwner.status == .conflict && notOwner.errorCode == "account_mismatch", "\(notOwner.bodyText)")

            // Bought, owned, credited by nobody (a claim is not a credit): listed, with the money at stake.
            let uncredited = try await api.anomalies("renewal_not_credited")
            #expect(uncredited.count == 1 && uncredited.first?["accountId"] == "acct-bob", "\(uncredited)")
            #expect(uncredited.first?["amount"]?["value"] == 499, "\(uncredited)")

            let granted = try await Self.post(api, "grants", account: "acct-bob", renewal)
            #expect(granted.status == .created, "\(granted.bodyText)")
            let periods = granted.json["transactions"]?.elements ?? []
            #expect(periods.map { $0["grantedAt"] == .null } == [true, false], "\(granted.bodyText)")
            let again = try await Self.post(api, "grants", account: "acct-bob", renewal)
            #expect(again.status == .ok && again.headers[HTTPField.Name("Idempotent-Replay")!] == "true", "\(again.bodyText)")
            let resigned = try Self.period("2000000999000002", days: -1, ca: apple.ca, signedLater: 60)
            let twice = try await Self.post(api, "grants", account: "acct-bob", resigned)
            #expect(twice.status == .conflict && twice.errorCode == "already_granted", "\(twice.bodyText)")
            #expect(try await Self.listed(api, "renewal_not_credited").count == 1)

            // The first period ended a day ago: crediting it now is recorded, and listed as access after expiry.
            #expect(try await Self.post(api, "grants", account: "acct-bob", first).status == .created)
            #expect(try await Self.listed(api, "renewal_not_credited").isEmpty)
            let late = try await Self.listed(api, "access_after_expiry")
            #expect(late.count == 1 && late.first?.contains("transaction \(Self.id) credited at") == true, "\(late)")
            let report = try await api.database.operations.verify()
            #expect(report.passed, "\(report)")
        }
    }
}
