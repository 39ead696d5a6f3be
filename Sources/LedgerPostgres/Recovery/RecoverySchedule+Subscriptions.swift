import Foundation
import LedgerCore
import PostgresNIO

/// The subscriptions the ledger asks their provider about (schema/027, `subscription_questions`): those whose last
/// known period ended `plan.renewalSilence` ago with nothing heard since — a renewal, a billing failure or an expiry
/// whose notification was lost. Held under a lease as an order's question is; a node killed mid-question frees it
/// when the lease runs out. Every time comes from the caller's clock.
extension RecoverySchedule {
    /// Takes up to `limit` subscriptions due to be asked about, the longest silent first, each held for `plan.lease`:
    /// - one whose last period ended between `plan.subscriptionReach` and `plan.renewalSilence` ago, never asked
    ///   about that period (a question about an earlier period is over: the subscription moved on since);
    /// - or asked about it, not settled, and due again (`next_ask_at`).
    /// Another node's held question is skipped, never waited for.
    public func claimDueSubscriptions(now: Date, plan: RecoveryPlan, limit: Int) async throws -> [SubscriptionQuestionClaim] {
        let lease = UUID()
        let until = now.addingTimeInterval(plan.lease.seconds)
        let silentSince = now.addingTimeInterval(-plan.renewalSilence.seconds)
        let reachStart = now.addingTimeInterval(-plan.subscriptionReach.seconds)
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining) { connection in
            var claims: [SubscriptionQuestionClaim] = []
            for try await (id, periodEndsAt, attempts) in try await connection.statement("""
                INSERT INTO subscription_questions AS q (subscription_id, period_ends_at, next_ask_at, lease, leased_until)
                SELECT s.subscription_id, s.period_ends_at, \(now), \(lease), \(until)
                FROM subscriptions s LEFT JOIN subscription_questions k USING (subscription_id)
                WHERE s.period_ends_at <= \(silentSince) AND s.period_ends_at > \(reachStart)
                  AND (k.subscription_id IS NULL OR k.period_ends_at <> s.period_ends_at
                       OR (NOT k.settled AND k.next_ask_at <= \(now) AND (k.leased_until IS NULL OR k.leased_until <= \(now))))
                ORDER BY s.period_ends_at
                LIMIT \(limit)
                ON CONFLICT (subscription_id) DO UPDATE
                    SET attempts = CASE WHEN q.period_ends_at <> EXCLUDED.period_ends_at THEN 0 ELSE q.attempts END,
                        settled = false, period_ends_at = EXCLUDED.period_ends_at,
                        lease = EXCLUDED.lease, leased_until = EXCLUDED.leased_until
                    WHERE (q.leased_until IS NULL OR q.leased_until <= \(now))
                      AND (q.period_ends_at <> EXCLUDED.period_ends_at OR (NOT q.settled AND q.next_ask_at <= \(now)))
                RETURNING subscription_id, period_ends_at, attempts
                """, logger: logger).decode((String, Date, Int).self) {
                claims.append(SubscriptionQuestionClaim(subscriptionId: id, periodEndsAt: periodEndsAt, attempts: attempts, lease: lease))
            }
            return claims
        }
    }

    /// Gives a subscription back after its question, with what it came to: `settled` (Apple said it ended, or refused
    /// the question for good) asks no more about this period; otherwise it is due again at `next`. Returns false when
    /// the lease was lost (it ran out and another node took the question).
    @discardableResult
    public func completeSubscriptionQuestion(
        _ claim: SubscriptionQuestionClaim, at now: Date, outcome: SubscriptionQuestionOutcome, said: String, next: Date
    ) async throws -> Bool {
        try await count("""
            UPDATE subscription_questions
            SET lease = NULL, leased_until = NULL, attempts = attempts + 1, last_asked_at = \(now),
                last_outcome = \(outcome.rawValue), last_said = \(said), settled = \(outcome.settles), next_ask_at = \(next)
            WHERE subscription_id = \(claim.subscriptionId) AND lease = \(claim.lease)
            RETURNING 1
            """) == 1
    }

    /// Where the question about `subscriptionId` stands, if it was ever asked about.
    public func subscriptionQuestion(_ subscriptionId: String) async throws -> SubscriptionQuestion? {
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining) { connection in
            var question: SubscriptionQuestion?
            for try await (periodEndsAt, attempts, next, settled, askedAt, outcome, said) in try await connection.statement("""
                SELECT period_ends_at, attempts, next_ask_at, settled, last_asked_at, last_outcome, last_said
                FROM subscription_questions WHERE subscription_id = \(subscriptionId)
                """, logger: logger).decode((Date, Int, Date, Bool, Date?, String?, String?).self) {
                question = SubscriptionQuestion(
                    periodEndsAt: periodEndsAt, attempts: attempts, nextAskAt: settled ? nil : next, lastAskedAt: askedAt,
                    lastOutcome: outcome.flatMap(SubscriptionQuestionOutcome.init(rawValue:)), lastSaid: said)
            }
            return question
        }
    }
}

/// A subscription this node holds, to ask its provider about.
public struct SubscriptionQuestionClaim: Sendable, Hashable {
    public var subscriptionId: String
    /// The end of the last period the ledger knew of when it was claimed: what the question is about.
    public var periodEndsAt: Date
    /// Questions asked about that period before this one.
    public var attempts: Int
    public var lease: UUID
}

/// What a question about a subscription came to.
public enum SubscriptionQuestionOutcome: String, Sendable, Hashable, CaseIterable {
    /// The verified answer told the ledger something new, recorded (`subscription.answered`).
    case recorded
    /// The verified answer said what the ledger knew already (billing still retried, say): asked again later.
    case noNews = "no_news"
    /// Apple says the subscription ended (expired, revoked), and the ledger has recorded all it said.
    case ended
    /// An answer whose signature did not verify: nothing recorded, a security log line; asked again later.
    case unverified
    /// No answer, a 5xx, rate limited: asked again later.
    case unreachable
    /// Apple knows no such transaction, or refused the question for good.
    case refused
    /// Apple refused our credentials.
    case configuration

    /// Whether the question about this period is over.
    public var settles: Bool {
        switch self {
        case .ended, .refused: true
        case .recorded, .noNews, .unverified, .unreachable, .configuration: false
        }
    }
}

/// Where the question about a subscription stands (`GET /v1/subscriptions/{id}`'s `recovery`).
public struct SubscriptionQuestion: Sendable, Hashable {
    public var periodEndsAt: Date
    public var attempts: Int
    /// When it will be asked again; nil when the question is over (settled).
    public var nextAskAt: Date?
    public var lastAskedAt: Date?
    public var lastOutcome: SubscriptionQuestionOutcome?
    public var lastSaid: String?
}
