import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviderClients
import LedgerProviders

/// Recovers what the ledger missed of a subscription: when its last known period ended `plan.renewalSilence` ago and
/// nothing was heard since (the `DID_RENEW`, `DID_FAIL_TO_RENEW` or `EXPIRED` notification was lost), Apple is asked.
///
/// Steps of one question (`RecoverySchedule.claimDueSubscriptions` holds the subscription meanwhile):
/// 1. Get All Subscription Statuses for the subscription's id: its last transaction, status and renewal info, each
///    verified (`AppStoreJWSVerifier`) before a word is believed; one that fails is a security log line and nothing
///    is recorded;
/// 2. when that last transaction is one the ledger never saw, the transaction history too: every period of this
///    subscription the ledger missed between (a ledger down for months misses several renewals), each verified;
/// 3. each period missed, then the status, recorded as `subscription.answered` with Apple's signed words as evidence
///    — only what is news (`Subscription.isNews`), so asking again records nothing until the answer changes;
/// 4. the question given back: over when Apple says the subscription ended (expired, revoked) or refused the
///    question for good; otherwise asked again after `plan.subscriptionDelays` (billing retry lasts up to 60 days).
extension Recoverer {
    /// Asks about every subscription due, `batch` at a time, at most `maximumBatches` times; none while Apple asked
    /// not to be asked (a 429's `Retry-After`). Returns what each question came to.
    @discardableResult
    public func askAboutSubscriptions(batch: Int = 16, maximumBatches: Int = 64) async throws -> [SubscriptionQuestionReport] {
        guard let appStore = questions.appStore else { return [] }
        var reports: [SubscriptionQuestionReport] = []
        for _ in 0..<maximumBatches {
            if let until = pauses.until(.appStore), clock() < until { break }
            let claims = try await database.recovery.claimDueSubscriptions(now: clock(), plan: plan, limit: batch)
            if claims.isEmpty { break }
            reports += try await withThrowingTaskGroup(of: SubscriptionQuestionReport.self) { group in
                for claim in claims {
                    group.addTask { try await self.ask(about: claim, api: appStore.api, verifier: appStore.verifier) }
                }
                var done: [SubscriptionQuestionReport] = []
                for try await report in group { done.append(report) }
                return done
            }
            if Task.isCancelled { break }
        }
        return reports
    }

    private func ask(
        about claim: SubscriptionQuestionClaim, api: AppStoreServerAPI, verifier: AppStoreJWSVerifier
    ) async throws -> SubscriptionQuestionReport {
        let id = claim.subscriptionId
        var outcome = SubscriptionQuestionOutcome.noNews, said = "", recorded = 0, notBefore: Date?
        let statuses: AppStoreSubscriptionStatuses?
        do throws(AppStoreServerAPIError) {
            statuses = try await api.subscriptionStatuses(id)
        } catch {
            statuses = nil
            said = error.description
            switch error {
            case .configuration: outcome = .configuration
            case .rateLimited(let until): (outcome, notBefore) = (.unreachable, until)
            case .unavailable, .unexpected, .malformedAnswer: outcome = .unreachable
            case .transactionNotFound, .invalidTransactionId, .invalidOrderId, .refused: outcome = .refused
            }
        }
        if let statuses { (outcome, said, recorded) = try await record(statuses, of: id, api: api, verifier: verifier) }
        if let notBefore { pauses.pause(.appStore, until: notBefore) }
        let now = clock()
        var next = plan.nextSubscriptionQuestion(afterAttempts: claim.attempts + 1, at: now)
        if let notBefore { next = max(next, notBefore) }
        try await database.recovery.completeSubscriptionQuestion(claim, at: now, outcome: outcome, said: said, next: next)
        if outcome == .unverified || outcome == .configuration || recorded > 0 {
            logger.info("recovery: asked Apple about subscription \(id): \(outcome.rawValue)", metadata: ["said": "\(said)"])
        }
        return SubscriptionQuestionReport(subscriptionId: id, outcome: outcome, said: said, recorded: recorded)
    }

    /// Verifies Apple's statuses and records what is news of subscription `id`: the periods missed (from the
    /// transaction history, when the last transaction is new), then the status.
    private func record(
        _ statuses: AppStoreSubscriptionStatuses, of id: String, api: AppStoreServerAPI, verifier: AppStoreJWSVerifier
    ) async throws -> (SubscriptionQuestionOutcome, String, Int) {
        guard let item = statuses.lastTransactions.first(where: { $0.originalTransactionId == id }) else {
            return (.noNews, "\(statuses.environment.rawValue) answered, but not about subscription \(id)", 0)
        }
        let transaction: SubscriptionTransaction, renewalInfo: SubscriptionRenewalInfo
        do {
            let signed = try await verifier.verifyTransaction(item.signedTransactionInfo, now: Date())
            let info = try await verifier.verifyRenewalInfo(item.signedRenewalInfo, now: Date())
            guard let period = signed.subscriptionTransaction, signed.originalTransactionId == id,
                  info.originalTransactionId == id
            else {
                return (.unverified, "Apple's answer about subscription \(id) names another subscription, or not an auto-renewable one; nothing recorded", 0)
            }
            (transaction, renewalInfo) = (period, info.subscriptionRenewalInfo)
        } catch {
            logger.warning("security: Apple's subscription status did not verify; nothing recorded", metadata: [
                "subscription": "\(id)", "reason": "\(error)",
            ])
            return (.unverified, "Apple's answer (\(statuses.environment.rawValue)) did not verify: \(error); nothing recorded", 0)
        }
        var recorded = 0
        let known = try await database.ledger.subscription(id)
        if known?.transactions[transaction.transactionId] == nil {
            recorded += try await recordMissedPeriods(of: id, before: transaction.transactionId, api: api, verifier: verifier)
        }
        let answer = ProviderSaid(
            subtype: item.status.name, signedAt: transaction.signedAt, transaction: transaction, renewalInfo: renewalInfo,
            evidence: ["signedTransactionInfo": .string(item.signedTransactionInfo), "signedRenewalInfo": .string(item.signedRenewalInfo)])
        let current = try await database.ledger.subscription(id)
        var words = "\(statuses.environment.rawValue) answered \(item.status.name), last period \(transaction.transactionId) until \(RFC3339.format(transaction.expiresAt))"
        if current.map({ $0.isNews(answer) }) ?? true {
            switch try await database.ledger.recordSubscriptionAnswer(id, said: answer, provider: .appStore) {
            case .recorded, .duplicate: recorded += 1
            case .refused(_, let code, let reason): words += "; refused \(code): \(reason)"
            }
        }
        words += recorded > 0 ? "; \(recorded) event(s) recorded" : "; nothing new"
        if item.status.hasEnded { return (.ended, words, recorded) }
        return (recorded > 0 ? .recorded : .noNews, words, recorded)
    }

    /// The periods of subscription `id` in the customer's transaction history that the ledger never saw (but the
    /// last one, `latest`, which the status records), each verified and recorded as `subscription.answered`
    /// (`HISTORY`). A history Apple cannot give now is logged: the status is recorded all the same, and the periods
    /// between are asked for again with the next period missed.
    private func recordMissedPeriods(
        of id: String, before latest: String, api: AppStoreServerAPI, verifier: AppStoreJWSVerifier
    ) async throws -> Int {
        let history: AppStoreTransactionHistory
        do throws(AppStoreServerAPIError) {
            history = try await api.transactionHistory(id)
        } catch {
            logger.warning("recovery: Apple's transaction history of subscription \(id) could not be read: \(error)")
            return 0
        }
        var recorded = 0
        for signed in history.signedTransactions {
            let transaction: AppStoreTransaction
            do {
                transaction = try await verifier.verifyTransaction(signed, now: Date())
            } catch {
                logger.warning("security: a transaction in Apple's history did not verify; not recorded", metadata: [
                    "subscription": "\(id)", "reason": "\(error)",
                ])
                continue
            }
            guard transaction.originalTransactionId == id, transaction.transactionId != latest,
                  let period = transaction.subscriptionTransaction
            else { continue }
            let said = ProviderSaid(
                subtype: "HISTORY", signedAt: period.signedAt, transaction: period, evidence: ["signedTransactionInfo": .string(signed)])
            guard try await database.ledger.subscription(id).map({ $0.isNews(said) }) ?? true else { continue }
            if case .recorded = try await database.ledger.recordSubscriptionAnswer(id, said: said, provider: .appStore) {
                recorded += 1
            }
        }
        return recorded
    }
}

/// What one question about a subscription came to.
public struct SubscriptionQuestionReport: Sendable, Hashable {
    public var subscriptionId: String
    public var outcome: SubscriptionQuestionOutcome
    public var said: String
    /// Events recorded on the subscription.
    public var recorded: Int
}
