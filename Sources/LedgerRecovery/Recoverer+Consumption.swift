import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviderClients

/// Answers Apple's `CONSUMPTION_REQUEST`s (a customer asked Apple for a refund) with Send Consumption Information,
/// when the operator's policy says to (`appStore.consumptionAnswers`; none: never). Steps of one answer:
/// 1. take the request (`RecoverySchedule.claimDueConsumptionRequests`: kept in `provider_messages`, signed less than
///    12 hours ago, not answered);
/// 2. read whether the ledger shows its purchase delivered (`deliveredAt`: its order's or its period's grant);
/// 3. send the policy's answer; keep what was sent and what came of it (`consumption_answers`): accepted (202) ends
///    it, no answer is tried again within Apple's 12 hours, a refusal for good ends it.
extension Recoverer {
    /// Answers every request due, `batch` at a time, at most `maximumBatches` times; none while Apple asked not to be
    /// asked. Returns what each attempt came to.
    @discardableResult
    public func answerConsumptionRequests(batch: Int = 16, maximumBatches: Int = 16) async throws -> [ConsumptionAnswerReport] {
        guard let policy = questions.consumptionAnswers, let api = questions.appStore?.api else { return [] }
        var reports: [ConsumptionAnswerReport] = []
        for _ in 0..<maximumBatches {
            if let until = pauses.until(.appStore), clock() < until { break }
            let claims = try await database.recovery.claimDueConsumptionRequests(
                now: clock(), window: ConsumptionAnswerPolicy.window, lease: plan.lease, limit: batch)
            if claims.isEmpty { break }
            for claim in claims { reports.append(try await answer(claim, policy: policy, api: api)) }
            if Task.isCancelled { break }
        }
        return reports
    }

    private func answer(
        _ claim: ConsumptionRequestClaim, policy: ConsumptionAnswerPolicy, api: AppStoreServerAPI
    ) async throws -> ConsumptionAnswerReport {
        let delivered = try await database.recovery.deliveredAt(claim.transactionId)
        let answer = policy.answer(delivered: delivered != nil)
        let known = delivered.map { "delivered (credited \(RFC3339.format($0)))" } ?? "not delivered (never credited)"
        let outcome: String, environment: AppStoreServerEnvironment?, next: Date?
        var said = "transaction \(claim.transactionId) \(known)"
        do throws(AppStoreServerAPIError) {
            environment = try await api.sendConsumptionInformation(claim.transactionId, answer)
            outcome = "sent"
            next = nil
            said += ": Apple accepted \(answer.deliveryStatus.rawValue)"
        } catch {
            environment = nil
            said += ": \(error.description)"
            let now = clock()
            let again = ConsumptionAnswerPolicy.nextAttempt(afterAttempts: claim.attempts + 1, at: now, requestedAt: claim.requestedAt)
            switch error {
            case .rateLimited(let until):
                pauses.pause(.appStore, until: until)
                outcome = "unreachable"
                next = again.map { max($0, until) }
            case .unavailable, .unexpected, .malformedAnswer:
                outcome = "unreachable"
                next = again
            case .configuration:
                outcome = "configuration"
                next = again
            case .transactionNotFound, .invalidTransactionId, .invalidOrderId, .refused:
                outcome = "refused"
                next = nil
            }
            if next == nil, outcome != "refused" { said += "; Apple's 12 hours are over: not answered" }
            logger.warning("recovery: a consumption request could not be answered", metadata: [
                "notificationUUID": "\(claim.notificationId)", "said": "\(said)",
            ])
        }
        try await database.recovery.completeConsumptionAnswer(
            claim, at: clock(), body: answer.json, sentIn: environment?.rawValue, outcome: outcome, said: said, next: next)
        return ConsumptionAnswerReport(notificationId: claim.notificationId, outcome: outcome, said: said, answer: answer)
    }
}

/// What one attempt to answer a consumption request came to.
public struct ConsumptionAnswerReport: Sendable, Hashable {
    public var notificationId: String
    /// `sent`, `unreachable`, `configuration` or `refused`.
    public var outcome: String
    public var said: String
    public var answer: ConsumptionAnswer
}
