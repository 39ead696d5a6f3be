import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerRecovery
import ProviderTestSupport
import Testing
import _CryptoExtras

@Suite("Recovery: the schedule asks the provider until it answers")
struct RecoveryScheduleTests {
    /// 补单 as the schedule does it: a queued payment with nothing after the threshold is asked about; "not paid" is
    /// an attempt, not an event; the provider's signed "paid" on the next attempt verifies the order, once.
    @Test func aPaymentNotPaidYetThenPaidIsRecoveredOnTheNextAttempt() async throws {
        try await RecoveryHarness.run { harness in
            try await harness.queuedOrder("wx-1")
            harness.wechat.hold(orderId: "wx-1", state: "NOTPAY", transactionId: nil)
            let node = harness.node()

            // Before the threshold, nothing is asked.
            #expect(try await node.runRound().isEmpty)
            harness.pastThreshold()
            let first = try await node.runRound()
            guard case .asked(let attempt, .due(let next))? = first.first, first.count == 1 else {
                Issue.record("first round: \(first)")
                return
            }
            #expect(attempt.outcome == .notYet && attempt.said.contains("NOTPAY") && attempt.providerWords?.contains("NOTPAY") == true)
            #expect(next == harness.clock.now.addingTimeInterval(15))
            #expect(try await harness.state("wx-1") == .paymentQueued)
            // Not due again before its time.
            #expect(try await node.runRound().isEmpty)

            harness.wechat.hold(orderId: "wx-1", state: "SUCCESS", transactionId: "4200001234202611250000000001")
            harness.clock.set(next)
            let second = try await node.runRound()
            guard case .asked(let recovered, .ended(.recovered))? = second.first else {
                Issue.record("second round: \(second)")
                return
            }
            #expect(recovered.attempt == 2 && recovered.recorded == ["provider.notified", "receipt.received", "receipt.verified"])
            #expect(try await harness.state("wx-1") == .verified)
            let history = try #require(try await harness.database.ledger.history("wx-1"))
            let fact = try #require(history.entries.first { $0.event.type == "provider.notified" }?.event)
            #expect(fact.metadata["actor"] == "provider:wechat_pay" && fact.data["evidence"]?["source"] == "query")

            // Recovered: never asked again, and the order does not enter again while it stays as it is.
            harness.clock.advance(.seconds(86_400))
            #expect(try await node.runRound().isEmpty)
            #expect(harness.wechat.requests == ["200 wx-1", "200 wx-1"])
            let entry = try #require(try await harness.entry("wx-1"))
            #expect(entry.status == .recovered && entry.attempts.map(\.outcome) == [.recovered, .notYet])
            #expect(try await harness.database.operations.verify().passed)
        }
    }

    /// A verified answer that is recorded but leaves the order where it was — here a payment of another amount, as
    /// Alipay's `WAIT_BUYER_PAY` is recorded as evidence only — does not end the schedule: it had ended it as
    /// `recovered`, and a buyer who then paid was never found.
    @Test func anAnswerRecordedButNotAppliedKeepsTheOrderOnTheSchedule() async throws {
        try await RecoveryHarness.run { harness in
            try await harness.queuedOrder("wx-2")
            harness.wechat.hold(orderId: "wx-2", state: "SUCCESS", transactionId: "4200001234202611250000000002", total: 999)
            let node = harness.node()
            harness.pastThreshold()
            let first = try await node.runRound()
            guard case .asked(let attempt, .due(let next))? = first.first, first.count == 1 else {
                Issue.record("first round: \(first)")
                return
            }
            #expect(attempt.outcome == .recordedNotApplied && attempt.recorded == ["provider.notified"], "\(attempt.said)")
            #expect(try await harness.state("wx-2") == .paymentQueued)

            harness.wechat.hold(orderId: "wx-2", state: "SUCCESS", transactionId: "4200001234202611250000000003")
            harness.clock.set(next)
            let second = try await node.runRound()
            guard case .asked(let recovered, .ended(.recovered))? = second.first else {
                Issue.record("second round: \(second)")
                return
            }
            #expect(recovered.recorded.contains("receipt.verified"))
            #expect(try await harness.state("wx-2") == .verified)
        }
    }

    /// A ledger order id with `.` or `:` cannot be a WeChat Pay `out_trade_no`: there is nothing to ask, which is not a
    /// configuration error (it was said as one, at error level, once per process).
    @Test func anOrderIdWeChatPayCannotHoldIsNotAskableNotAConfigurationError() async throws {
        try await RecoveryHarness.run { harness in
            try await harness.queuedOrder("wx.3:a")
            let report = try await harness.node().askNow(orderId: "wx.3:a", askedBy: "test")
            guard case .asked(let attempt, _) = report else { Issue.record("\(report)"); return }
            #expect(attempt.outcome == .notAskable, "\(attempt.said)")
            #expect(harness.wechat.requests.isEmpty)
        }
    }

    /// No answer (WeChat Pay's 500 SYSTEM_ERROR) is asked again on the documented schedule — 15 s, 15 s, 30 s, 3 m …
    /// 6 h — and after the last attempt the order is unrecoverable, listed for finance with the last outcome.
    @Test func aProviderThatNeverAnswersIsAskedOnTheScheduleThenTheOrderIsListedUnrecoverable() async throws {
        try await RecoveryHarness.run { harness in
            try await harness.queuedOrder("wx-1")
            harness.wechat.failNext(1000)
            let node = harness.node()
            harness.pastThreshold()
            var askedAt: [Date] = []
            while true {
                askedAt.append(harness.clock.now)
                let reports = try await node.runRound()
                guard case .asked(let attempt, let next)? = reports.first, reports.count == 1 else {
                    Issue.record("round \(askedAt.count): \(reports)")
                    return
                }
                #expect(attempt.outcome == .unreachable, "\(attempt.said)")
                guard case .due(let due) = next else {
                    #expect(next == .ended(.unrecoverable))
                    break
                }
                harness.clock.advance(.seconds(1))
                #expect(try await node.runRound().isEmpty, "asked before its time")
                harness.clock.set(due)
            }
            let gaps = zip(askedAt.dropFirst(), askedAt).map { Duration.seconds($0.timeIntervalSince($1)) }
            #expect(gaps == RecoveryPlan.standard.delays)
            #expect(askedAt.count == RecoveryPlan.standard.maximumAttempts)
            #expect(harness.wechat.requests.count == RecoveryPlan.standard.maximumAttempts)

            let listed = try await harness.database.finance.anomalies(kinds: [.unrecoverable], limit: 10)
            #expect(listed.anomalies.map(\.orderId) == ["wx-1"])
            #expect(listed.anomalies.first?.detail.contains("16 times") == true && listed.anomalies.first?.detail.contains("unreachable") == true,
                    "\(listed.anomalies)")
            // Unrecoverable is the end: nothing more is asked, and the order itself is unchanged.
            harness.clock.advance(.seconds(86_400))
            #expect(try await node.runRound().isEmpty)
            #expect(try await harness.state("wx-1") == .paymentQueued)
        }
    }

    /// Two nodes running rounds and support asking at the same moment: the order is asked about by one at a time.
    @Test func twoNodesAndSupportNeverAskAboutOneOrderAtOnce() async throws {
        try await RecoveryHarness.run { harness in
            try await harness.queuedOrder("wx-1")
            harness.wechat.hold(orderId: "wx-1", state: "NOTPAY", transactionId: nil)
            harness.wechat.answerAfter(.milliseconds(100))
            harness.pastThreshold()
            let (a, b) = (harness.node(), harness.node())
            var reports: [RecoveryReport] = []
            for _ in 0..<5 {
                reports += try await withThrowingTaskGroup(of: [RecoveryReport].self) { group in
                    group.addTask { try await a.runRound() }
                    group.addTask { try await b.runRound() }
                    group.addTask { [try await a.askNow(orderId: "wx-1", askedBy: "token:support")] }
                    group.addTask { [try await b.askNow(orderId: "wx-1", askedBy: "token:support")] }
                    var all: [RecoveryReport] = []
                    for try await some in group { all += some }
                    return all
                }
                harness.clock.advance(.seconds(86_400))
            }
            #expect(harness.wechat.mostAtOnce == 1)
            let asked = reports.filter { if case .asked = $0 { true } else { false } }
            #expect(asked.count == harness.wechat.requests.count && asked.count >= 5)
            #expect(reports.contains(.busy(orderId: "wx-1")))
            #expect(try await harness.entry("wx-1")?.attempts.count == asked.count)
        }
    }

    /// A node that took an order and died before answering (its lease held, never given back): no other node asks
    /// while the lease holds; once it runs out, the next round asks, and nothing is lost.
    @Test func anOrderHeldByANodeThatDiedIsAskedOnceItsLeaseRunsOut() async throws {
        try await RecoveryHarness.run { harness in
            try await harness.queuedOrder("wx-1")
            harness.wechat.hold(orderId: "wx-1", state: "SUCCESS", transactionId: "4200001234202611250000000001")
            harness.pastThreshold()
            let plan = RecoveryPlan.standard
            try await harness.database.recovery.enrol(now: harness.clock.now, plan: plan, providers: [.wechatPay])
            let dead = try await harness.database.recovery.claimDue(now: harness.clock.now, plan: plan, limit: 10)
            #expect(dead.map(\.orderId) == ["wx-1"])

            let survivor = harness.node()
            #expect(try await survivor.runRound().isEmpty)
            #expect(try await survivor.askNow(orderId: "wx-1", askedBy: "token:support") == .busy(orderId: "wx-1"))
            harness.clock.advance(plan.lease)
            let reports = try await survivor.runRound()
            guard case .asked(let attempt, .ended(.recovered))? = reports.first else {
                Issue.record("\(reports)")
                return
            }
            #expect(attempt.attempt == 1 && attempt.askedBy == Recoverer.thisNode)
            #expect(try await harness.state("wx-1") == .verified)
            // The dead node's late word changes nothing: its lease is gone.
            try #require(dead.count == 1)
            try await harness.database.recovery.settle(dead[0], now: harness.clock.now)
            #expect(try await harness.entry("wx-1")?.status == .recovered)
        }
    }

    /// An order that moved on by itself (here: its payment recorded by the client) is settled without a question.
    @Test func anOrderThatMovedOnIsSettledWithoutAsking() async throws {
        try await RecoveryHarness.run { harness in
            try await harness.queuedOrder("wx-1")
            harness.wechat.failNext(1)
            harness.pastThreshold()
            let node = harness.node()
            _ = try await node.runRound()
            _ = try await harness.database.ledger.record(orderId: "wx-1", events: [
                Submission(eventId: UUID(), type: "order.cancelled", data: ["reason": "user_cancelled"]),
            ], metadata: EventMetadata(actor: "test-suite"))
            harness.clock.advance(.seconds(15))
            #expect(try await node.runRound() == [.settled(orderId: "wx-1")])
            #expect(harness.wechat.requests.count == 1)
            #expect(try await harness.entry("wx-1")?.status == .settled)
        }
    }

    /// An answer signed by a key the ledger does not trust for WeChat Pay is not believed: nothing is recorded, the
    /// attempt says so, and the order stays on the schedule.
    @Test func anAnswerThatDoesNotVerifyRecordsNothing() async throws {
        let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        try await RecoveryHarness.run(platformKey: stranger.publicKey) { harness in
            try await harness.queuedOrder("wx-1")
            harness.wechat.hold(orderId: "wx-1", state: "SUCCESS", transactionId: "4200001234202611250000000001")
            harness.pastThreshold()
            let reports = try await harness.node().runRound()
            guard case .asked(let attempt, .due)? = reports.first else {
                Issue.record("\(reports)")
                return
            }
            #expect(attempt.outcome == .unverified && attempt.recorded.isEmpty, "\(attempt.said)")
            #expect(try await harness.state("wx-1") == .paymentQueued)
            #expect(try await harness.database.ledger.history("wx-1")?.entries.count == 2)
        }
    }
}
