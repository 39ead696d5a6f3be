import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The finance entry point (`LedgerDatabase.finance`): revenue, reconciliation against a provider's file, anomalies.
/// Read-only; each answer comes from the projections.
public struct Finance: Sendable {
    let pools: EventLoopPools
    let logger: Logger

    /// The pool of the caller's event loop (`EventLoopPools`).
    var client: SessionPool { pools.current }

    /// Granted, refunded and net per group over `from`…`to` (both included), days in `timeZone` (`RevenueReport`).
    public func revenue(from: PeriodBound, to: PeriodBound, groupBy: [RevenueDimension], timeZone: String) async throws -> [RevenueRow] {
        try await RevenueReport(client: client, logger: logger).rows(from: from, to: to, groupBy: groupBy, timeZone: timeZone)
    }

    /// Active subscriptions, MRR, first purchases, renewals, refunds and churn per day, product and currency over
    /// `from`…`to` (both included), days in `timeZone` (`SubscriptionReport`).
    public func subscriptions(from: PeriodBound, to: PeriodBound, timeZone: String) async throws -> [SubscriptionReportRow] {
        try await SubscriptionReport(client: client, logger: logger).rows(from: from, to: to, timeZone: timeZone)
    }

    /// Refuses a reconciliation period before any file is read (`Reconciliation.checkPeriod`).
    public static func checkReconciliationPeriod(from: PeriodBound, to: PeriodBound) throws(FinanceError) {
        try Reconciliation.checkPeriod(from: from, to: to)
    }

    /// Compares a provider's transaction list, streamed in `chunks`, with the ledger; every row goes to `emit`.
    public func reconcile<Chunks: AsyncSequence & Sendable>(
        provider: Provider, from: PeriodBound, to: PeriodBound, chunks: Chunks,
        emit: (ReconciliationRow) async throws -> Void
    ) async throws -> ReconciliationSummary where Chunks.Element == [UInt8] {
        try await Reconciliation(client: client, logger: logger).run(provider: provider, from: from, to: to, chunks: chunks, emit: emit)
    }

    /// One page of anomalies, kind by kind, each kind by age, of one order when `orderId` is given (`AnomalyFinder`).
    public func anomalies(
        kinds: [AnomalyKind] = [], olderThan: Duration? = nil, orderId: String? = nil, limit: Int,
        after cursor: AnomalyCursor? = nil
    ) async throws -> AnomalyPage {
        try await AnomalyFinder(client: client, logger: logger)
            .page(kinds: kinds, olderThan: olderThan, orderId: orderId, limit: limit, after: cursor)
    }
}
