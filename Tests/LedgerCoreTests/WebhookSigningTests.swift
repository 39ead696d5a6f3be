import Foundation
@testable import LedgerCore
import Testing

/// What a webhook endpoint is given and how a delivery is signed: the Standard Webhooks convention, its selectors, its
/// URL, its retry plan.
@Suite("Webhooks: signatures, selectors, URLs, the retry plan")
struct WebhookSigningTests {
    /// The Standard Webhooks specification's own example (standardwebhooks.com, "Verifying signatures").
    @Test func theConventionsExampleSignsAsItSays() throws {
        let secret = try #require(WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let header = WebhookSignature.header(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8), secrets: [secret])
        #expect(header == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(secret.text == "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    }

    @Test func aRotationSignsWithBothSecretsSpaceSeparatedNewestFirst() throws {
        let new = WebhookSecret.generate(), old = WebhookSecret.generate()
        let both = WebhookSignature.header(id: "msg_1", timestamp: 1, body: [1, 2], secrets: [new, old])
        let parts = both.split(separator: " ").map(String.init)
        #expect(parts == [
            WebhookSignature.header(id: "msg_1", timestamp: 1, body: [1, 2], secrets: [new]),
            WebhookSignature.header(id: "msg_1", timestamp: 1, body: [1, 2], secrets: [old]),
        ])
        #expect(new.key.count == 32 && new != old)
    }

    @Test func aSecretNeverShowsInADescription() {
        let secret = WebhookSecret.generate()
        #expect(!"\(secret)".contains(secret.text.dropFirst(6)))
        #expect(!String(reflecting: secret).contains(secret.text.dropFirst(6)))
    }

    @Test func selectorsAreAKindsEveryEventAnEventTypeOrEverything() throws {
        #expect(WebhookEventSelector("*") != nil)
        #expect(WebhookEventSelector("order.*") != nil && WebhookEventSelector("subscription.*") != nil)
        #expect(WebhookEventSelector("order.granted") != nil && WebhookEventSelector("payment.queued") != nil)
        #expect(WebhookEventSelector("subscription.renewed") != nil)
        for refused in ["", "orders.*", "order.grant", "payment.*", "*.*", "order.granted "] {
            #expect(WebhookEventSelector(refused) == nil, "\(refused)")
        }
        #expect(try WebhookEventSelector.parseList("order.*, subscription.*,order.*").get().map(\.pattern) == ["order.*", "subscription.*"])
        guard case .failure(let refused) = WebhookEventSelector.parseList("order.*,refunds") else {
            Issue.record("refunds is no selector")
            return
        }
        #expect(refused.pattern == "refunds")
    }

    @Test func anEndpointURLIsHTTPOrHTTPSWithAHostAndNoCredentials() throws {
        #expect(try WebhookEndpointURL("https://hooks.example.com/ledger?x=1").host == "hooks.example.com")
        #expect(try WebhookEndpointURL("http://[::1]:8080/x").host == "::1")
        for (refused, reason) in [
            ("ftp://example.com/", "http or https"), ("https:///path", "no host"), ("https://user:pw@example.com/", "user"),
            ("not a url", "http or https"), ("https://example.com/#frag", "fragment"),
            ("https://example.com/" + String(repeating: "a", count: 2_100), "longer"),
        ] {
            #expect(throws: InvalidWebhookURL.self, "\(refused)") { try WebhookEndpointURL(refused) }
            do { _ = try WebhookEndpointURL(refused) } catch { #expect(error.description.contains(reason), "\(refused): \(error)") }
        }
    }

    /// About three days of retries; jitter within ±20 %; Retry-After honoured up to the longest wait; nothing after the
    /// last.
    @Test func theRetryPlanSpansAboutThreeDays() {
        let plan = WebhookRetryPlan.standard
        let total = plan.waits.reduce(0) { $0 + $1.seconds }
        #expect((70 * 3_600...78 * 3_600).contains(total), "\(total / 3_600) h")
        #expect(plan.waits.count == 14)
        let start = Date(timeIntervalSince1970: 0)
        #expect(plan.nextAttempt(after: 1, at: start, random: { 0 }) == start.addingTimeInterval(5))
        #expect(plan.nextAttempt(after: 1, at: start, random: { 1 }) == start.addingTimeInterval(6))
        #expect(plan.nextAttempt(after: 1, at: start, random: { -1 }) == start.addingTimeInterval(4))
        #expect(plan.nextAttempt(after: 1, at: start, retryAfter: .seconds(90), random: { 0 }) == start.addingTimeInterval(90))
        #expect(plan.nextAttempt(after: 1, at: start, retryAfter: .seconds(10 * 86_400), random: { 0 }) == start.addingTimeInterval(43_200))
        #expect(plan.nextAttempt(after: 14, at: start, random: { 0 }) == start.addingTimeInterval(43_200))
        #expect(plan.nextAttempt(after: 15, at: start) == nil)
        for _ in 0..<100 {
            let next = plan.nextAttempt(after: 6, at: start)?.timeIntervalSince(start) ?? 0
            #expect((2_880...4_320).contains(next))
        }
    }
}
