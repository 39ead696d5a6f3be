import Crypto
import Foundation
import LedgerCore
import LedgerProviderClients
import LedgerProviders
import ProviderTestSupport
import Testing

/// The App Store Server API's lists against the stand-in, which pages two items at a time (Apple: 20), so every list
/// here crosses pages; its tokens are base64, so they must reach it percent-encoded.
@Suite("App Store Server API: transaction history, notification history, order lookup")
struct AppStoreServerAPIHistoryTests {
    let apple = FakeAppStoreServerAPI()
    let messages: AppleMessages

    init() throws { messages = try AppleMessages() }

    func client(_ base: String, key: P256.Signing.PrivateKey? = nil, keyId: String? = nil) -> AppStoreServerAPI {
        AppStoreServerAPI(
            key: AppStoreServerAPIKey(
                keyId: keyId ?? apple.expected.keyId, issuerId: apple.expected.issuerId, bundleId: apple.expected.bundleId,
                privateKey: key ?? apple.key),
            productionURL: base + "/production", sandboxURL: base + "/sandbox",
            sleep: { _ in })
    }

    /// "ENVIRONMENT STATUS" of each request the stand-in saw.
    var statuses: [String] { apple.requests.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } }

    @Test func aHistoryIsReadToItsLastPageFollowingRevision() async throws {
        let signed = try (1...5).map { try messages.transaction(orderId: "o-h\($0)", transactionId: "200000000000010\($0)") }
        apple.holdHistory(signed, for: "2000000000000101")
        try await apple.run { base async throws -> Void in
            let history = try await client(base).transactionHistory("2000000000000101")
            #expect(history.signedTransactions == signed && history.environment == .production && history.complete)
            let verifier = ProviderTestKit.verifier(trusting: messages.ca)
            for transaction in history.signedTransactions {
                _ = try await verifier.verifyTransaction(transaction, now: Date())
            }
        }
        let requests = apple.requests
        #expect(requests.count == 3 && statuses == ["production 200", "production 200", "production 200"], "\(requests)")
        #expect(requests.first == "production 200 /production/inApps/v2/history/2000000000000101")
        #expect(requests.dropFirst().allSatisfy { $0.contains("?revision=") && $0.contains("%3D") }, "\(requests)")
    }

    @Test func aHistoryProductionDoesNotKnowIsReadFromSandbox() async throws {
        let signed = try (1...3).map {
            try messages.transaction(orderId: "o-s\($0)", transactionId: "200000000000020\($0)", environment: "Sandbox")
        }
        apple.holdHistory(signed, for: "2000000000000201", in: "sandbox")
        try await apple.run { base async throws -> Void in
            let history = try await client(base).transactionHistory("2000000000000201")
            #expect(history.signedTransactions == signed && history.environment == .sandbox)
            await #expect(throws: AppStoreServerAPIError.transactionNotFound("2000000000000299")) {
                try await client(base).transactionHistory("2000000000000299")
            }
        }
        #expect(statuses == ["production 404", "sandbox 200", "sandbox 200", "production 404", "sandbox 404"])
    }

    /// Only notifications that failed, sent within [from, to): one just before the window, one at its end, and one
    /// delivered inside it are not answered; the five that are span three pages.
    @Test func theNotificationHistoryIsTheFailuresOfTheWindowAcrossPages() async throws {
        let to = Date().addingTimeInterval(-60)
        let from = to.addingTimeInterval(-3_600)
        var failed: [String] = []
        for minute in 0..<5 {
            let payload = try messages.notification("ONE_TIME_CHARGE", orderId: "o-n\(minute)", transactionId: "200000000000030\(minute)")
            apple.holdNotification(payload, sentAt: from.addingTimeInterval(Double(minute) * 600))
            failed.append(payload)
        }
        apple.holdNotification(try messages.notification("ONE_TIME_CHARGE", orderId: "o-before"), sentAt: from.addingTimeInterval(-0.002))
        apple.holdNotification(try messages.notification("ONE_TIME_CHARGE", orderId: "o-at-end"), sentAt: to)
        apple.holdNotification(try messages.notification("ONE_TIME_CHARGE", orderId: "o-delivered"),
                               sentAt: from.addingTimeInterval(60), failed: false)
        apple.holdNotification(try messages.notification("ONE_TIME_CHARGE", orderId: "o-sandbox"), sentAt: from.addingTimeInterval(60),
                               in: "sandbox")
        let expected = failed
        try await apple.run { base async throws -> Void in
            let history = try await client(base).notificationHistory(from: from, to: to)
            #expect(history.signedPayloads == expected && history.environment == .production && history.complete)
        }
        let requests = apple.requests
        #expect(statuses == ["production 200", "production 200", "production 200"], "\(requests)")
        #expect(requests.first == "production 200 /production/inApps/v1/notifications/history")
        #expect(requests.dropFirst().allSatisfy { $0.contains("?paginationToken=") }, "\(requests)")
        let asked: JSONValue = [
            "startDate": .int(Int64((from.timeIntervalSince1970 * 1000).rounded(.down))),
            "endDate": .int(Int64((to.timeIntervalSince1970 * 1000).rounded(.down))), "onlyFailures": true,
        ]
        #expect(apple.notificationRequests == [asked, asked, asked])
    }

    @Test func sandboxsNotificationHistoryIsAskedOfSandboxWhenChosen() async throws {
        let payload = try messages.notification("ONE_TIME_CHARGE", orderId: "o-sb")
        apple.holdNotification(payload, sentAt: Date().addingTimeInterval(-120), in: "sandbox")
        try await apple.run { base async throws -> Void in
            let history = try await client(base).notificationHistory(
                from: Date().addingTimeInterval(-3_600), to: Date(), environment: .sandbox)
            #expect(history.signedPayloads == [payload] && history.environment == .sandbox)
        }
        #expect(statuses == ["sandbox 200"])
    }

    @Test func anOrderIdIsLookedUpAndAnInvalidOneIsAnAnswer() async throws {
        let signed = [try messages.transaction(orderId: "o-l1", transactionId: "2000000000000401"),
                      try messages.transaction(orderId: "o-l2", transactionId: "2000000000000402")]
        apple.holdOrder("MK5TTTVWJH", signedTransactions: signed)
        try await apple.run { base async throws -> Void in
            #expect(try await client(base).lookUpOrder("MK5TTTVWJH") == .found(signedTransactions: signed))
            #expect(try await client(base).lookUpOrder("MZZZZZZZZZ") == .invalid)
        }
        #expect(apple.requests == [
            "production 200 /production/inApps/v1/lookup/MK5TTTVWJH", "production 200 /production/inApps/v1/lookup/MZZZZZZZZZ",
        ])
    }

    @Test func anIdThatCouldChangeThePathIsNeverSent() async throws {
        try await apple.run { base async throws -> Void in
            for bad in ["../../v1/other", "MK5?x=1", "MK5/..", "MK5%2F", "", "MK５", String(repeating: "M", count: 129)] {
                await #expect(throws: AppStoreServerAPIError.invalidOrderId(bad)) { try await client(base).lookUpOrder(bad) }
                await #expect(throws: AppStoreServerAPIError.invalidTransactionId(bad)) {
                    try await client(base).transactionHistory(bad)
                }
            }
        }
        #expect(apple.requests.isEmpty)
    }

    /// The stand-in refuses a token signed by another key (401) on every list, as Apple does: a configuration error,
    /// said at once, never retried.
    @Test func aWrongKeyIsAConfigurationErrorOnEveryList() async throws {
        apple.holdHistory([try messages.transaction(orderId: "o-k")], for: "2000000000000501")
        try await apple.run { base async throws -> Void in
            let wrong = client(base, key: P256.Signing.PrivateKey())
            // Plain `throws` closures: a typed-throws closure literal returning through an enum crashes Swift 6.3.1's IRGen.
            let calls: [@Sendable () async throws -> Void] = [
                { _ = try await wrong.transactionHistory("2000000000000501") },
                { _ = try await wrong.notificationHistory(from: Date().addingTimeInterval(-60), to: Date()) },
                { _ = try await wrong.lookUpOrder("MK5TTTVWJH") },
            ]
            for call in calls {
                do {
                    try await call()
                    Issue.record("a wrong key was accepted")
                } catch let error as AppStoreServerAPIError {
                    guard case .configuration = error else { Issue.record("\(error)"); continue }
                    #expect(!error.isRetryable)
                }
            }
        }
        #expect(statuses == ["production 401", "production 401", "production 401"], "\(apple.requests)")
    }

    @Test func aRateLimitedPageIsWaitedOutAndAskedAgain() async throws {
        let signed = try (1...3).map { try messages.transaction(orderId: "o-r\($0)", transactionId: "200000000000060\($0)") }
        apple.holdHistory(signed, for: "2000000000000601")
        try await apple.run { base async throws -> Void in
            let api = client(base)
            apple.rateLimit(next: 1)
            #expect(try await api.transactionHistory("2000000000000601").signedTransactions == signed)
        }
        #expect(statuses == ["production 429", "production 200", "production 200"])
    }
}
