import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import LedgerRecovery
import LedgerTestSupport
import ProviderTestSupport
import Synchronization
import Testing

/// How often the ledger asks: people's questions wait their turn and never use up the schedule's plan; a provider
/// that says "not before" (Apple's 429 `Retry-After`) is not asked again before then, by the order's plan or by its
/// lane. Before: support asking in a loop asked 3 times a second and ended an order `unrecoverable` in 5 s; Apple's
/// time was ignored and the schedule asked at its next delay.
@Suite("Recovery: the pace of asking")
struct AskingPaceTests {
    @Test func peoplesQuestionsWaitTheirTurnAndNeverUseUpThePlan() async throws {
        try await RecoveryHarness.run { harness in
            let orders = ["wx-1", "wx-2", "wx-3", "wx-4"]
            for orderId in orders {
                try await harness.queuedOrder(orderId)
                harness.wechat.hold(orderId: orderId, state: "NOTPAY", transactionId: nil)
            }
            let node = harness.node()
            // Twenty questions from support, each refused when repeated at once: asked twenty times, counted never.
            for question in 1...20 {
                guard case .asked(let attempt, .due)? = try await node.askNow(orderId: "wx-1", askedBy: "token:support") as RecoveryReport?,
                      attempt.outcome == .notYet
                else {
                    Issue.record("question \(question) was not asked")
                    return
                }
                guard case .tooSoon(_, let wait) = try await node.askNow(orderId: "wx-1", askedBy: "token:support") else {
                    Issue.record("question \(question) repeated at once was asked")
                    return
                }
                #expect(abs(wait.seconds - 10) < 0.01, "\(wait)")
                harness.clock.advance(.seconds(10))
            }
            #expect(harness.wechat.requests.count == 20)
            let entry = try #require(try await harness.entry("wx-1"))
            #expect(entry.status == .pending && entry.attemptCount == 0, "\(entry)")

            // The schedule's plan is whole: its first attempt about wx-1 is its attempt 1.
            harness.pastThreshold()
            let round = try await node.runRound()
            let planned = round.compactMap { report -> Int? in
                guard case .asked(let attempt, _) = report, attempt.orderId == "wx-1" else { return nil }
                return attempt.attempt
            }
            #expect(planned == [1], "\(round)")

            // Three people's questions to one provider in a second from one node, no more.
            harness.clock.advance(.seconds(30))
            var reports: [RecoveryReport] = []
            for orderId in orders { reports.append(try await node.askNow(orderId: orderId, askedBy: "token:support")) }
            let asked = reports.filter { if case .asked = $0 { true } else { false } }
            #expect(asked.count == 3, "\(reports)")
            guard case .tooSoon("wx-4", let wait)? = reports.last else {
                Issue.record("the fourth question in a second was asked: \(reports)")
                return
            }
            #expect(abs(wait.seconds - 1) < 0.01, "\(wait)")
            // Refused before it was claimed or asked: nothing about it was recorded.
            #expect(try await harness.entry("wx-4")?.attempts.filter { $0.askedBy == "token:support" }.isEmpty == true)
        }
    }

    @Test func appleRateLimitKeepsItsOrdersAndItsLaneWaitingUntilTheTimeAppleSaid() async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()
        let clock = TestClock()
        try await TestDatabase.withOwnerAndService { _, service in
            try await apple.run { base in
                let database = LedgerDatabase(client: service)
                for (orderId, transactionId) in [("as-1", "2000000000000901"), ("as-2", "2000000000000902")] {
                    _ = try await database.ledger.record(orderId: orderId, events: [
                        Submission(eventId: UUID(), type: "order.created", data: [
                            "accountId": "acct-1", "productId": "gems.100", "amount": ["value": 499, "currency": "USD"],
                            "provider": "app_store",
                            "appAccountToken": .string(AppAccountToken.forOrderId(orderId).uuidString.lowercased()),
                        ]),
                        Submission(eventId: UUID(), type: "payment.queued", data: [:]),
                        Submission(eventId: UUID(), type: "receipt.received", data: ["transactionId": .string(transactionId)]),
                    ], metadata: EventMetadata(actor: "test-suite"))
                    apple.hold(try messages.transaction(orderId: orderId, transactionId: transactionId), for: transactionId)
                }
                let api = AppStoreServerAPI(
                    key: AppStoreServerAPIKey(keyId: apple.expected.keyId, issuerId: apple.expected.issuerId,
                                              bundleId: apple.expected.bundleId, privateKey: apple.key),
                    productionURL: base + "/production", sandboxURL: base + "/sandbox")
                let questions = ProviderQuestions(
                    clients: ProviderClients(appStore: api), verifiers: messages.verifiers, logger: RecoveryHarness.logger)
                let node = Recoverer(database: database, questions: questions, clock: clock.read, logger: RecoveryHarness.logger)
                _ = try await node.sweepIfDue()  // the first sweep of Apple's history, out of the way
                let before = apple.requests.count

                apple.rateLimit(next: 1, retryAfter: 3_600)
                clock.set(max(clock.now, Date()).addingTimeInterval(61))
                // Apple's time is an hour after its answer, which comes after this: compared with it, not with the end
                // of the round, which on a busy machine came more than 10 s after the answer.
                let asking = Date()
                let first = try await node.runRound(batch: 1)
                guard case .asked(let attempt, .due(let next))? = first.first, first.count == 1 else {
                    Issue.record("first round: \(first)")
                    return
                }
                #expect(attempt.outcome == .unreachable, "\(attempt.said)")
                #expect(next >= asking.addingTimeInterval(3_599), "Apple's time, not the plan's 15 s: \(next)")
                #expect(apple.requests.count == before + 1, "the lane stopped at Apple's 429: \(apple.requests)")

                // The plan's delays pass, and the other order is due: Apple said not yet, so nothing is asked.
                clock.advance(.seconds(900))
                #expect(try await node.runRound(batch: 1).isEmpty)
                #expect(apple.requests.count == before + 1, "\(apple.requests)")

                clock.set(next)
                let later = try await node.runRound(batch: 1)
                #expect(later.count == 2 && later.allSatisfy { $0.outcome == .recovered }, "\(later)")
                #expect(try await database.ledger.order("as-1")?.state == .verified)
                #expect(try await database.ledger.order("as-2")?.state == .verified)
            }
        }
    }

    /// One provider that never finishes answering (Apple's body dripping a byte at a time, for longer than the test)
    /// delays no other: each provider has a lane of its own, so WeChat Pay's three orders, asked one after another,
    /// are recovered while Apple's one question hangs. Before, batches mixed providers and waited for their slowest:
    /// 40 hanging Apple questions held Alipay's and WeChat Pay's back 85 s. (That a question ends at its deadline is
    /// `AppStoreServerAPITests.anAnswerThatDripsEndsAtTheQuestionsDeadline`.)
    @Test func aProviderThatNeverFinishesAnsweringDelaysNoOther() async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()
        apple.dripAnswers(every: .milliseconds(500))
        let wechat = try FakeWeChatPayAPI()
        let clock = TestClock()
        let wechatOrders = ["wx-1", "wx-2", "wx-3"]
        try await TestDatabase.withOwnerAndService { _, service in
            try await apple.run { appleBase in
                try await wechat.run { wechatBase in
                    let database = LedgerDatabase(client: service)
                    _ = try await database.ledger.record(orderId: "as-1", events: [
                        Submission(eventId: UUID(), type: "order.created", data: [
                            "accountId": "acct-1", "productId": "gems.100", "amount": ["value": 499, "currency": "USD"],
                            "provider": "app_store",
                        ]),
                        Submission(eventId: UUID(), type: "payment.queued", data: [:]),
                        Submission(eventId: UUID(), type: "receipt.received", data: ["transactionId": "2000000000000911"]),
                    ], metadata: EventMetadata(actor: "test-suite"))
                    for (index, orderId) in wechatOrders.enumerated() {
                        _ = try await database.ledger.record(orderId: orderId, events: [
                            Submission(eventId: UUID(), type: "order.created", data: [
                                "accountId": "acct-1", "productId": "vip.month", "amount": ["value": 1234, "currency": "CNY"],
                                "provider": "wechat_pay",
                            ]),
                            Submission(eventId: UUID(), type: "payment.queued", data: [:]),
                        ], metadata: EventMetadata(actor: "test-suite"))
                        wechat.hold(orderId: orderId, state: "SUCCESS", transactionId: "420000123420261125000000000\(index)")
                    }
                    let questions = ProviderQuestions(
                        clients: ProviderClients(
                            appStore: AppStoreServerAPI(
                                key: AppStoreServerAPIKey(keyId: apple.expected.keyId, issuerId: apple.expected.issuerId,
                                                          bundleId: apple.expected.bundleId, privateKey: apple.key),
                                productionURL: appleBase + "/production", sandboxURL: appleBase + "/sandbox", timeout: .seconds(600)),
                            wechatPay: WeChatPayAPI(
                                merchantId: ProviderTestKit.merchantId, serial: wechat.merchantSerial, privateKey: wechat.merchantKey,
                                baseURL: wechatBase)),
                        verifiers: ProviderVerifiers(
                            appStore: ProviderTestKit.verifier(trusting: messages.ca), wechatPay: ProviderTestKit.wechatVerifier()),
                        logger: RecoveryHarness.logger)
                    let node = Recoverer(database: database, questions: questions, clock: clock.read, logger: RecoveryHarness.logger)
                    clock.set(max(clock.now, Date()).addingTimeInterval(601))

                    let finished = Finished()
                    let round = Task {
                        defer { finished.value.withLock { $0 = true } }
                        return try await node.runRound(batch: 1)
                    }
                    // Waits on the condition (every WeChat Pay order verified), looking every 50 ms, two minutes at most.
                    let started = ContinuousClock.now
                    var verified = 0
                    while verified < wechatOrders.count, ContinuousClock.now - started < .seconds(120) {
                        verified = 0
                        for orderId in wechatOrders where try await database.ledger.order(orderId)?.state == .verified { verified += 1 }
                        if verified < wechatOrders.count { try await Task.sleep(for: .milliseconds(50)) }
                    }
                    #expect(verified == wechatOrders.count, "WeChat Pay's orders waited for Apple's question")
                    #expect(!finished.value.withLock { $0 }, "Apple's question was still unanswered meanwhile: its lane alone waited")
                    #expect(apple.requests.contains { $0.contains(" drip ") }, "\(apple.requests)")
                    round.cancel()
                    _ = try? await round.value
                }
            }
        }
    }
}

/// Set once a task has ended.
private final class Finished: Sendable {
    let value = Mutex(false)
}
