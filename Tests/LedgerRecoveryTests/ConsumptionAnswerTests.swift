import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import LedgerRecovery
import LedgerTestSupport
import ProviderTestSupport
import Testing

/// Apple's `CONSUMPTION_REQUEST` answered with Send Consumption Information (issue 44): by the operator's policy only
/// (off by default), from what the ledger shows delivered, once, within Apple's 12 hours, every answer kept. The
/// stand-in checks the body field by field as Apple documents it.
@Suite("Recovery: Apple's consumption requests answered by the operator's policy")
struct ConsumptionAnswerTests {
    /// Runs `body` with an App Store order `delivered-1` credited (transaction `…01`) and an order `undelivered-1`
    /// verified but never credited (`…02`), a consumption request recorded for each, and a recoverer that asks the
    /// stand-in with `policy`.
    static func run(
        policy: ConsumptionAnswerPolicy?,
        _ body: @Sendable @escaping (Recoverer, LedgerDatabase, FakeAppStoreServerAPI, TestClock) async throws -> Void
    ) async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()
        for transactionId in ["2000000000009901", "2000000000009902"] { apple.knowConsumable(transactionId) }
        try await TestDatabase.withOwnerAndService { _, service in
            try await apple.run { base in
                let database = LedgerDatabase(client: service)
                for (orderId, transactionId, credited) in [
                    ("delivered-1", "2000000000009901", true), ("undelivered-1", "2000000000009902", false),
                ] {
                    var lifecycle = Lifecycle()
                    lifecycle.transactionId = transactionId
                    let events = credited ? lifecycle.happyPath : [lifecycle.created, lifecycle.queued, lifecycle.receipt, lifecycle.verified]
                    _ = try await database.ledger.record(orderId: orderId, events: events, metadata: EventMetadata(actor: "test-suite"))
                    let request = try await messages.verifiers.appStore!.verifyNotification(
                        try messages.notification("CONSUMPTION_REQUEST", orderId: orderId, transactionId: transactionId), now: Date())
                    _ = try await database.ledger.recordProviderMessage(try #require(request.message))
                }
                let api = AppStoreServerAPI(
                    key: AppStoreServerAPIKey(keyId: apple.expected.keyId, issuerId: apple.expected.issuerId,
                                              bundleId: apple.expected.bundleId, privateKey: apple.key),
                    productionURL: base + "/production", sandboxURL: base + "/sandbox")
                let questions = ProviderQuestions(
                    clients: ProviderClients(appStore: api, consumptionAnswers: policy), verifiers: messages.verifiers,
                    logger: RecoveryHarness.logger)
                let clock = TestClock()
                try await body(
                    Recoverer(database: database, questions: questions, clock: clock.read, logger: RecoveryHarness.logger),
                    database, apple, clock)
            }
        }
    }

    /// What the stand-in took, by transaction.
    static func answers(_ apple: FakeAppStoreServerAPI) -> [String: JSONValue] {
        Dictionary(apple.consumptionAnswers.map { ($0.transactionId, $0.body) }) { first, _ in first }
    }

    @Test func eachRequestIsAnsweredOnceFromWhatTheLedgerShowsDelivered() async throws {
        let policy = ConsumptionAnswerPolicy(sampleContentProvided: true, refundPreference: .declineWhenDelivered)
        try await Self.run(policy: policy) { recoverer, database, apple, _ in
            let reports = try await recoverer.answerConsumptionRequests()
            #expect(reports.map(\.outcome) == ["sent", "sent"], "\(reports)")
            let answers = Self.answers(apple)
            #expect(answers["2000000000009901"] == [
                "customerConsented": true, "sampleContentProvided": true, "deliveryStatus": "DELIVERED", "refundPreference": "DECLINE",
            ])
            #expect(answers["2000000000009902"] == [
                "customerConsented": true, "sampleContentProvided": true, "deliveryStatus": "UNDELIVERED_OTHER",
                "refundPreference": "GRANT_FULL",
            ])
            // Kept: what was sent, when, where. Asked again, nothing more is sent.
            let listed = try await database.finance.anomalies(kinds: [.consumptionRequest], olderThan: .zero, limit: 10).anomalies
            #expect(Set(listed.map(\.orderId)) == ["delivered-1", "undelivered-1"])
            let delivered = try #require(listed.first { $0.orderId == "delivered-1" })
            #expect(delivered.detail.contains("; answered DELIVERED, DECLINE at "), "\(delivered.detail)")
            #expect(try await recoverer.answerConsumptionRequests().isEmpty)
            #expect(apple.consumptionAnswers.count == 2)
        }
    }

    @Test func withoutAPolicyNothingIsAnswered() async throws {
        try await Self.run(policy: nil) { recoverer, _, apple, _ in
            #expect(try await recoverer.answerConsumptionRequests().isEmpty)
            _ = try await recoverer.runRound()
            #expect(apple.consumptionAnswers.isEmpty && !apple.requests.contains { $0.contains("consumption") }, "\(apple.requests)")
        }
    }

    /// No answer (a 503): tried again a minute later, not before, and answered once; a request past Apple's 12 hours is
    /// never answered.
    @Test func anUnansweredAttemptIsTriedAgainWithinAppleSTwelveHoursOnly() async throws {
        let policy = ConsumptionAnswerPolicy(sampleContentProvided: false)
        try await Self.run(policy: policy) { recoverer, database, apple, clock in
            apple.failNext(1)
            let first = try await recoverer.answerConsumptionRequests(batch: 1, maximumBatches: 1)
            #expect(first.map(\.outcome) == ["unreachable"], "\(first)")
            let failed = try #require(first.first?.notificationId)
            #expect(try await database.recovery.consumptionAnswer(failed)?.sentAt == nil)
            // The other request is answered meanwhile; the failed one waits its minute.
            #expect(try await recoverer.answerConsumptionRequests().map(\.outcome) == ["sent"])
            clock.advance(.seconds(61))
            #expect(try await recoverer.answerConsumptionRequests().map(\.outcome) == ["sent"])
            let kept = try #require(try await database.recovery.consumptionAnswer(failed))
            #expect(kept.attempts == 2 && kept.sentAt != nil && kept.environment == "Production" && kept.nextAttemptAt == nil)
            #expect(kept.body?["refundPreference"] == nil && kept.body?["sampleContentProvided"] == false)
            #expect(apple.consumptionAnswers.count == 2)
            clock.advance(.seconds(13 * 3_600))
            #expect(try await recoverer.answerConsumptionRequests().isEmpty)
        }
    }
}
