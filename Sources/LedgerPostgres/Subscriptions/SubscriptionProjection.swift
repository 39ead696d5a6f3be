import Foundation
import LedgerCore
import PostgresNIO

/// The subscription's projection in the append's statements (`StreamProjection`, schema/023): the read takes its
/// `subscriptions` row and the `subscription_transactions` bindings of the transactions its new events name; the
/// write upserts the row (its facts as the fold keeps them) and binds every transaction of the subscription to it,
/// and its check aborts the statement when another subscription holds one of them. Every transaction is written again
/// on each append (a dozen rows a year of monthly renewals), so that the check counts them all without a second read;
/// a subscription with many years of renewals would want only the event's own transaction written.
enum SubscriptionProjection: StreamProjection {
    /// What a decision on a subscription starts from beside its version.
    struct Read: Sendable {
        /// Nil: no event yet.
        let subscription: Subscription?
        /// The subscription each transaction the new events name is bound to, when one is.
        let bindings: [String: String]
    }

    static let kind = StreamKind.subscription

    static let readColumns = "bound.ids, bound.holders, " + SubscriptionRows.columnsOfSub

    static func readJoins(claims transactionIds: [String], into sql: inout PostgresQuery.StringInterpolation) {
        sql.appendLiteral("""
            LEFT JOIN subscriptions sub ON sub.subscription_id = wanted.stream_id
            CROSS JOIN LATERAL (
                SELECT array_agg(t.transaction_id) AS ids, array_agg(t.subscription_id) AS holders
                FROM subscription_transactions t WHERE t.transaction_id = ANY(
            """)
        sql.appendInterpolation(transactionIds)
        sql.appendLiteral("::text[])\n) bound")
    }

    static func decodeRead(_ columns: PostgresRandomAccessRow, from index: Int, stream id: String) throws -> Read {
        let ids = try columns[index].decode([String]?.self) ?? []
        let holders = try columns[index + 1].decode([String]?.self) ?? []
        var bindings: [String: String] = [:]
        for (offset, transactionId) in ids.enumerated() where holders.indices.contains(offset) {
            bindings[transactionId] = holders[offset]
        }
        return Read(subscription: try SubscriptionRows.decode(columns, from: index + 2), bindings: bindings)
    }

    static let noStream = Read(subscription: nil, bindings: [:])

    static func read(after subscription: Subscription, stream id: String) -> Read {
        Read(subscription: subscription, bindings: Dictionary(subscription.transactions.keys.map { ($0, id) }) { first, _ in first })
    }

    /// Any of the provider's events may start a subscription's stream (a renewal may arrive before its purchase).
    static func startsStream(firstEventType type: String) -> Bool { true }

    static func write(_ subscription: Subscription?, stream id: String, into sql: inout PostgresQuery.StringInterpolation) {
        let transactions = subscription.map { subscription in subscription.transactions.values.map { ($0, subscription) } } ?? []
        sql.appendLiteral(", projected AS (\n" + SubscriptionRows.upsertSQL + "\nSELECT ")
        sql.appendInterpolation(id)
        sql.appendLiteral(", ")
        sql.appendInterpolation(subscription?.accountId)
        sql.appendLiteral("::text, ")
        sql.appendInterpolation(subscription?.orderId)
        sql.appendLiteral("::text, ")
        sql.appendInterpolation(subscription?.factsJSON.canonicalJSON)
        sql.appendLiteral("::text::jsonb, ")
        sql.appendInterpolation(subscription?.version)
        sql.appendLiteral("::int4, ")
        sql.appendInterpolation(subscription.map { Timestamp($0.updatedAt) })
        sql.appendLiteral("::timestamptz, ")
        sql.appendInterpolation(subscription?.periodEndsAt.map(Timestamp.init))
        sql.appendLiteral("::timestamptz\nWHERE ")
        sql.appendInterpolation(subscription != nil)
        sql.appendLiteral(" AND EXISTS (SELECT 1 FROM won)\n" + SubscriptionRows.upsertConflictSQL + "\n), bound AS (\n")
        sql.appendLiteral(SubscriptionRows.bindSQL + "\nSELECT b.transaction_id, ")
        sql.appendInterpolation(id)
        sql.appendLiteral(", " + SubscriptionRows.boundValues + "\nFROM unnest(")
        sql.appendInterpolation(transactions: transactions)
        sql.appendLiteral(") AS b(" + SubscriptionRows.transactionColumns + ")\nWHERE EXISTS (SELECT 1 FROM won)\n")
        sql.appendLiteral(SubscriptionRows.bindConflictSQL + "\nRETURNING 1\n)\n")
    }

    static func writeCheck(_ subscription: Subscription?, into sql: inout PostgresQuery.StringInterpolation) {
        sql.appendLiteral("ledger_append_requires((SELECT count(*) FROM bound) = ")
        sql.appendInterpolation(Int64(subscription?.transactions.count ?? 0))
        sql.appendLiteral("::int8, 'a transaction of subscription ' || ")
        sql.appendInterpolation(subscription?.subscriptionId)
        sql.appendLiteral("::text || ' is claimed by another subscription')")
    }

    static func groupWrite(_ subscriptions: [Subscription], into sql: inout PostgresQuery.StringInterpolation) {
        var owner: [Int] = [], transactions: [(transaction: SubscriptionTransaction, of: Subscription)] = []
        for (index, subscription) in subscriptions.enumerated() {
            for transaction in subscription.transactions.values {
                owner.append(index + 1)
                transactions.append((transaction, subscription))
            }
        }
        sql.appendLiteral(", x AS (\nSELECT * FROM unnest(")
        sql.appendInterpolation(subscriptions.map(\.subscriptionId))
        sql.appendLiteral("::text[], ")
        sql.appendInterpolation(NullableArray(subscriptions.map(\.accountId)))
        sql.appendLiteral("::text[], ")
        sql.appendInterpolation(NullableArray(subscriptions.map(\.orderId)))
        sql.appendLiteral("::text[], ")
        sql.appendInterpolation(subscriptions.map(\.factsJSON.canonicalJSON))
        sql.appendLiteral("::text[], ")
        sql.appendInterpolation(subscriptions.map(\.version))
        sql.appendLiteral("::int4[], ")
        sql.appendInterpolation(subscriptions.map { Timestamp($0.updatedAt) })
        sql.appendLiteral("::timestamptz[], ")
        sql.appendInterpolation(subscriptions.map { Int64($0.transactions.count) })
        sql.appendLiteral("::int8[], ")
        sql.appendInterpolation(NullableArray(subscriptions.map { $0.periodEndsAt.map(Timestamp.init) }))
        sql.appendLiteral("""
            ::timestamptz[])
            WITH ORDINALITY AS x(subscription_id, account_id, order_id, facts, version, updated_at, claimed, period_ends_at, n)
            ), projected AS (

            """)
        sql.appendLiteral(SubscriptionRows.upsertSQL + """

            SELECT x.subscription_id, x.account_id, x.order_id, x.facts::jsonb, x.version, x.updated_at, x.period_ends_at
            FROM x JOIN won USING (n)

            """)
        sql.appendLiteral(SubscriptionRows.upsertConflictSQL + "\n), bound AS (\n" + SubscriptionRows.bindSQL + "\n")
        sql.appendLiteral("SELECT b.transaction_id, x.subscription_id, " + SubscriptionRows.boundValues + "\nFROM unnest(")
        sql.appendInterpolation(owner)
        sql.appendLiteral("::int8[], ")
        sql.appendInterpolation(transactions: transactions)
        sql.appendLiteral(") AS b(n, " + SubscriptionRows.transactionColumns + ")\nJOIN won USING (n) JOIN x USING (n)\n")
        sql.appendLiteral(SubscriptionRows.bindConflictSQL + "\nRETURNING subscription_id\n)\n")
    }

    /// Per appended event, every transaction of its subscription bound to it (`w.n` is the subscription's `x.n`).
    static let groupWriteJoins = "JOIN x USING (n)"
    static let groupWriteCheck = """
        ledger_append_requires((SELECT count(*) FROM bound b WHERE b.subscription_id = x.subscription_id) = x.claimed,
                               'a transaction of subscription ' || x.subscription_id || ' is claimed by another subscription')
        """
}
