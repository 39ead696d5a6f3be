import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import LedgerRecovery
import LedgerTestSupport
import ProviderTestSupport
import Testing

/// Subscriptions whose renewal went unheard (issue 44, recovery): the schedule asks Apple's Get All Subscription
/// Statuses (and the transaction history for the periods between), records only what Apple signed that the ledger did
/// not know, and stops asking once Apple says the subscription ended. The stand-in checks the ledger's token and
/// answers signed by the tests' CA; a forged answer records nothing.
@Suite("Recovery: subscriptions whose renewal went unheard")
struct SubscriptionRecoveryTests {
    static let id = "2000000888000001"
    static let day: TimeInterval = 86_400

    /// A period of the subscription, signed by `ca` now.
    static func period(_ transactionId: String, from start: Date, days: Double = 30, ca: ProviderTestKit.CA) throws -> String {
        try ProviderTestKit.jws(payload: [
            "transactionId": transactionId, "originalTransactionId": id, "productId": "pro.monthly",
            "bundleId": ProviderTestKit.bundleId, "purchaseDate": AppleMessages.milliseconds(start),
            "expiresDate": AppleMessages.milliseconds(start.addingTimeInterval(days * day)), "price": 4990, "currency": "USD",
            "environment": "Production", "signedDate": AppleMessages.milliseconds(Date()), "type": "Auto-Renewable Subscription",
            "webOrderLineItemId": transactionId + "9", "inAppOwnershipType": "PURCHASED",
        ], ca: ca)
    }

    /// The renewal info, signed by `ca` now: renewing, or not (`expirationIntent` 1: the customer cancelled).
    static func renewal(autoRenew: Bool, ca: ProviderTestKit.CA) throws -> String {
        var payload: [String: Any] = [
            "originalTransactionId": id, "autoRenewProductId": "pro.monthly", "productId": "pro.monthly",
            "autoRenewStatus": autoRenew ? 1 : 0, "environment": "Production", "signedDate": AppleMessages.milliseconds(Date()),
        ]
        if !autoRenew { payload["expirationIntent"] = 1 }
        return try ProviderTestKit.jws(payload: payload, ca: ca)
    }

    /// Runs `body` with a recoverer that asks the stand-in (trusting `messages.ca`), on a fresh database where the
    /// subscription's first period (`t1`, from `started`, 30 days) was recorded from its `SUBSCRIBED` notification.
    static func run(
        started: Date, _ body: @Sendable @escaping (Recoverer, LedgerDatabase, FakeAppStoreServerAPI, TestClock, ProviderTestKit.CA) async throws -> Void
    ) async throws {
        let ca = try ProviderTestKit.CA()
        let apple = FakeAppStoreServerAPI()
        let verifier = ProviderTestKit.verifier(trusting: ca)
        try await TestDatabase.withOwnerAndService { _, service in
            try await apple.run { base in
                let database = LedgerDatabase(client: service)
                let first = try await verifier.verifyTransaction(try period("\(id)", from: started, ca: ca), now: Date())
                let transaction = try #require(first.subscriptionTransaction)
                let said = ProviderSaid(
                    notificationId: "n-subscribed", subtype: "INITIAL_BUY", signedAt: first.signedDate, transaction: transaction,
                    renewalInfo: try await verifier.verifyRenewalInfo(try renewal(autoRenew: true, ca: ca), now: Date()).subscriptionRenewalInfo)
                _ = try await database.ledger.recordSubscriptionNotification(
                    id, event: .provider(.started, said), notificationId: "n-subscribed", provider: .appStore, requestId: nil)
                let api = AppStoreServerAPI(
                    key: AppStoreServerAPIKey(keyId: apple.expected.keyId, issuerId: apple.expected.issuerId,
                                              bundleId: apple.expected.bundleId, privateKey: apple.key),
                    productionURL: base + "/production", sandboxURL: base + "/sandbox")
                let questions = ProviderQuestions(
                    clients: ProviderClients(appStore: api), verifiers: ProviderVerifiers(appStore: verifier), logger: RecoveryHarness.logger)
                let clock = TestClock()
                let recoverer = Recoverer(database: database, questions: questions, clock: clock.read, logger: RecoveryHarness.logger)
                try await body(recoverer, database, apple, clock, ca)
            }
        }
    }

    /// Two renewals missed while the ledger heard nothing: Apple's status names the last, its history the one
    /// between. Both are recorded once, with Apple's signed words; the subscription is entitled again; the next round
    /// asks nothing (its last period has not ended).
    @Test func missedRenewalsAreRecoveredFromTheStatusAndTheHistoryOnce() async throws {
        let started = Date().addingTimeInterval(-65 * Self.day)
        try await Self.run(started: started) { recoverer, database, apple, _, ca in
            let t2 = try Self.period("2000000888000002", from: started.addingTimeInterval(30 * Self.day), ca: ca)
            let t3 = try Self.period("2000000888000003", from: started.addingTimeInterval(60 * Self.day), ca: ca)
            apple.holdStatus(of: Self.id, status: 1, signedTransaction: t3, signedRenewalInfo: try Self.renewal(autoRenew: true, ca: ca), for: Self.id)
            apple.holdHistory([try Self.period(Self.id, from: started, ca: ca), t2, t3], for: Self.id)
            #expect(try await database.ledger.subscription(Self.id)?.entitlement(at: Date()).isEntitled == false)

            let reports = try await recoverer.askAboutSubscriptions()
            #expect(reports.map(\.outcome) == [.recorded] && reports.first?.recorded == 2, "\(reports)")
            let subscription = try #require(try await database.ledger.subscription(Self.id))
            #expect(Set(subscription.transactions.keys) == [Self.id, "2000000888000002", "2000000888000003"])
            #expect(subscription.entitlement(at: Date()).isEntitled)
            let events = try await database.ledger.store.read(StreamName(.subscription, Self.id))
            #expect(events.map(\.type) == ["subscription.started", "subscription.answered", "subscription.answered"])
            #expect(events.map { $0.data["subtype"] } == ["INITIAL_BUY", "HISTORY", "ACTIVE"])
            try #require(events.count == 3)
            #expect(events[1].data["evidence"]?["signedTransactionInfo"] == .string(t2))
            #expect(events[2].data["evidence"]?["signedTransactionInfo"] == .string(t3))
            #expect(events[2].metadata["actor"] == "provider:app_store")
            let question = try #require(try await database.recovery.subscriptionQuestion(Self.id))
            #expect(question.lastOutcome == .recorded && question.attempts == 1)

            // Its last period ends in 25 days: nothing is due, nothing asked.
            let asked = apple.requests.count
            #expect(try await recoverer.askAboutSubscriptions().isEmpty)
            #expect(apple.requests.count == asked)
            #expect(try await database.operations.verify().passed)
        }
    }

    /// A `DID_RENEW` Apple failed to deliver, found by the sweep of its notification history, is the subscription's
    /// renewal, as if it had been delivered (it had reached the order side only): the period is the subscription's,
    /// and the schedule has nothing to ask about.
    @Test func aSweptRenewalIsTheSubscriptionsRenewal() async throws {
        let started = Date().addingTimeInterval(-31 * Self.day)
        try await Self.run(started: started) { recoverer, database, apple, _, ca in
            let renewal = try Self.period("2000000888000002", from: started.addingTimeInterval(30 * Self.day), ca: ca)
            var payload = ProviderTestKit.notificationPayload(
                type: "DID_RENEW", signedTransactionInfo: renewal, signedRenewalInfo: try Self.renewal(autoRenew: true, ca: ca),
                signedDate: Date())
            payload["notificationUUID"] = UUID().uuidString.lowercased()
            apple.holdNotification(try ProviderTestKit.jws(payload: payload, ca: ca), sentAt: Date().addingTimeInterval(-3_600))

            #expect(try await recoverer.sweepIfDue()[.production]?.pages == 1)
            let subscription = try #require(try await database.ledger.subscription(Self.id))
            #expect(subscription.transactions["2000000888000002"] != nil && subscription.entitlement(at: Date()).isEntitled)
            let events = try await database.ledger.store.read(StreamName(.subscription, Self.id))
            #expect(events.map(\.type) == ["subscription.started", "subscription.renewed"])
            #expect(try await recoverer.askAboutSubscriptions().isEmpty)
        }
    }

    /// An answer signed by a CA the ledger does not trust: nothing recorded, said as a security event, and asked
    /// again after the plan's first delay (not before).
    @Test func aForgedStatusRecordsNothingAndIsAskedAgainLater() async throws {
        let started = Date().addingTimeInterval(-40 * Self.day)
        try await Self.run(started: started) { recoverer, database, apple, clock, _ in
            let forger = try ProviderTestKit.CA(name: "Untrusted")
            let forged = try Self.period("2000000888000002", from: started.addingTimeInterval(30 * Self.day), ca: forger)
            apple.holdStatus(of: Self.id, status: 1, signedTransaction: forged, signedRenewalInfo: try Self.renewal(autoRenew: true, ca: forger), for: Self.id)

            #expect(try await recoverer.askAboutSubscriptions().map(\.outcome) == [.unverified])
            #expect(try await database.ledger.store.read(StreamName(.subscription, Self.id)).count == 1)
            #expect(try await database.ledger.subscription(Self.id)?.transactions.count == 1)
            // Not again within the first delay; again after it.
            clock.advance(.seconds(3_500))
            #expect(try await recoverer.askAboutSubscriptions().isEmpty)
            clock.advance(.seconds(200))
            #expect(try await recoverer.askAboutSubscriptions().map(\.outcome) == [.unverified])
            #expect(try await database.recovery.subscriptionQuestion(Self.id)?.attempts == 2)
        }
    }

    /// Apple says the subscription expired (the customer cancelled): what it signed is recorded once, the question is
    /// over, and the schedule asks no more about that period, however long it waits.
    @Test func anExpiryIsRecordedAndEndsTheQuestions() async throws {
        let started = Date().addingTimeInterval(-32 * Self.day)
        try await Self.run(started: started) { recoverer, database, apple, clock, ca in
            apple.holdStatus(
                of: Self.id, status: 2, signedTransaction: try Self.period(Self.id, from: started, ca: ca),
                signedRenewalInfo: try Self.renewal(autoRenew: false, ca: ca), for: Self.id)

            #expect(try await recoverer.askAboutSubscriptions().map(\.outcome) == [.ended])
            let subscription = try #require(try await database.ledger.subscription(Self.id))
            #expect(subscription.renewalInfo?.autoRenew == false && subscription.renewalInfo?.expirationIntent == .voluntary)
            let events = try await database.ledger.store.read(StreamName(.subscription, Self.id))
            #expect(events.map(\.type) == ["subscription.started", "subscription.answered"])
            #expect(events.last?.data["subtype"] == "EXPIRED" && events.last?.data["transaction"] != nil)
            let question = try #require(try await database.recovery.subscriptionQuestion(Self.id))
            #expect(question.lastOutcome == .ended && question.nextAskAt == nil)

            let asked = apple.requests.count
            clock.advance(.seconds(10 * 86_400))
            #expect(try await recoverer.askAboutSubscriptions().isEmpty)
            #expect(apple.requests.count == asked)
        }
    }
}
