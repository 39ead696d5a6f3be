import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// Rebuilds the subscription projections (`subscriptions`, `subscription_transactions`) from the log, in one
/// transaction: the subscriptions' writers are stopped (readers are not) while every subscription stream is folded
/// again and its rows replaced. A subscription has a few events a month, and there is one stream per subscriber: the
/// whole fold is short, so it is done under the lock rather than beside the running service as the orders' is
/// (`ProjectionRebuild`).
struct SubscriptionRebuild: Sendable {
    let client: SessionPool
    let logger: Logger

    /// The number of subscriptions folded.
    func run() async throws -> Int {
        let folds = StreamFolds<SubscriptionStream>(client: client, logger: logger)
        return try await client.withTransaction(logger: logger) { connection in
            // `streams` first, as appends take it first (`ProjectionRebuild.swap`).
            try await connection.queryToEnd(
                "LOCK TABLE streams, subscriptions, subscription_transactions IN EXCLUSIVE MODE", logger: logger)
            var ids: [String] = []
            for try await id in try await connection.statement(
                "SELECT stream_id FROM streams WHERE kind = 'subscription' ORDER BY stream_id", logger: logger
            ).decode(String.self) {
                ids.append(id)
            }
            try await connection.queryToEnd("DELETE FROM subscription_transactions", logger: logger)
            try await connection.queryToEnd("DELETE FROM subscriptions", logger: logger)
            let folded = try await folds.fold(ids, on: connection)
            try await SubscriptionRows.insertAll(folded, on: connection, logger: logger)
            return folded.count
        }
    }
}

extension SubscriptionRows {
    /// Inserts the rows of `subscriptions` (two statements).
    static func insertAll(_ subscriptions: [Subscription], on connection: PostgresConnection, logger: Logger) async throws {
        guard !subscriptions.isEmpty else { return }
        try await connection.queryToEnd(
            """
            INSERT INTO subscriptions (\(unescaped: writtenColumns))
            SELECT id, account, order_id, facts::jsonb, version, updated_at, period_ends_at
            FROM unnest(\(subscriptions.map(\.subscriptionId))::text[], \(NullableArray(subscriptions.map(\.accountId)))::text[],
                        \(NullableArray(subscriptions.map(\.orderId)))::text[], \(subscriptions.map(\.factsJSON.canonicalJSON))::text[],
                        \(subscriptions.map(\.version))::int4[], \(subscriptions.map { Timestamp($0.updatedAt) })::timestamptz[],
                        \(NullableArray(subscriptions.map { $0.periodEndsAt.map(Timestamp.init) }))::timestamptz[])
                 AS s(id, account, order_id, facts, version, updated_at, period_ends_at)
            """, logger: logger)
        let owned = subscriptions.flatMap { subscription in subscription.transactions.values.map { (transaction: $0, of: subscription) } }
        try await connection.queryToEnd(
            """
            \(unescaped: bindSQL)
            SELECT b.transaction_id, o.subscription_id, \(unescaped: boundValues)
            FROM unnest(\(transactions: owned)) WITH ORDINALITY AS b(\(unescaped: transactionColumns), n)
            JOIN unnest(\(owned.map(\.of.subscriptionId))::text[]) WITH ORDINALITY AS o(subscription_id, n) USING (n)
            """, logger: logger)
    }
}
