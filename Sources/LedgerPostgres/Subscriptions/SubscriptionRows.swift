import Foundation
import LedgerCore
import PostgresNIO

/// The SQL of the subscription projections (schema/023): `subscriptions` (one row per subscription: its owner, its
/// signed facts, when its last known period ends: schema/027) and `subscription_transactions` (which subscription
/// each transaction belongs to).
enum SubscriptionRows {
    /// The columns `decode` reads, in its order.
    static let columns = "subscription_id, account_id, order_id, facts, version, updated_at"
    /// What a write writes: `columns`, then `period_ends_at` (`Subscription.periodEndsAt`, read by the recovery
    /// schedule alone).
    static let writtenColumns = columns + ", period_ends_at"
    /// The columns as `sub.…`, for a statement that joins `subscriptions AS sub`, as `decode` reads them (the facts as text).
    static let columnsOfSub = "sub.subscription_id, sub.account_id, sub.order_id, sub.facts::text, sub.version, sub.updated_at"

    static let upsertSQL = "INSERT INTO subscriptions (\(writtenColumns))"
    static let upsertConflictSQL = """
        ON CONFLICT (subscription_id) DO UPDATE SET account_id = EXCLUDED.account_id, order_id = EXCLUDED.order_id,
            facts = EXCLUDED.facts, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at,
            period_ends_at = EXCLUDED.period_ends_at
        """

    /// The columns of a transaction's binding, as `appendInterpolation(transactions:)` binds them (schema/023, 025,
    /// 026).
    static let transactionColumns = """
        transaction_id, product_id, purchased_at, expires_at, revoked_at, environment, price_value, currency,
        family_shared, periods_per_year, refunded_value, granted_at
        """
    /// What a binding writes after `transaction_id` and `subscription_id`, from `unnest(…) AS b(transactionColumns)`.
    static let boundValues = """
        b.product_id, b.purchased_at, b.expires_at, b.revoked_at, b.environment, b.price_value, b.currency,
        b.family_shared, b.periods_per_year, b.refunded_value, b.granted_at
        """
    static let bindSQL = """
        INSERT INTO subscription_transactions AS t
            (transaction_id, subscription_id, product_id, purchased_at, expires_at, revoked_at, environment, price_value,
             currency, family_shared, periods_per_year, refunded_value, granted_at)
        """
    /// A transaction another subscription holds is left as it is, and not returned: the write's check counts.
    static let bindConflictSQL = """
        ON CONFLICT (transaction_id) DO UPDATE SET product_id = EXCLUDED.product_id,
            purchased_at = EXCLUDED.purchased_at, expires_at = EXCLUDED.expires_at, revoked_at = EXCLUDED.revoked_at,
            environment = EXCLUDED.environment, price_value = EXCLUDED.price_value, currency = EXCLUDED.currency,
            family_shared = EXCLUDED.family_shared, periods_per_year = EXCLUDED.periods_per_year,
            refunded_value = EXCLUDED.refunded_value, granted_at = EXCLUDED.granted_at
            WHERE t.subscription_id = EXCLUDED.subscription_id
        """

    /// The subscription in the `columns` from `start` on; nil when its id is NULL (an outer join that found none).
    static func decode(_ columns: PostgresRandomAccessRow, from start: Int) throws -> Subscription? {
        guard let id = try columns[start].decode(String?.self) else { return nil }
        let facts = try columns[start + 3].decode(String.self)
        let parsed: JSONValue
        do { parsed = try JSONValue(parsing: Array(facts.utf8)) } catch {
            throw CorruptRow(column: "subscriptions.facts", value: id)
        }
        do {
            return try Subscription(
                subscriptionId: id, facts: parsed, accountId: try columns[start + 1].decode(String?.self),
                orderId: try columns[start + 2].decode(String?.self), version: try columns[start + 4].decode(Int.self),
                updatedAt: try columns[start + 5].decode(Date.self))
        } catch {
            throw CorruptRow(column: "subscriptions.facts", value: id)
        }
    }
}

extension PostgresQuery.StringInterpolation {
    /// Subscription transactions' bindings, one array per column of `SubscriptionRows.transactionColumns`: each
    /// transaction of its subscription, with when the backend credited it.
    mutating func appendInterpolation(transactions owned: [(transaction: SubscriptionTransaction, of: Subscription)]) {
        let transactions = owned.map(\.transaction)
        appendInterpolation(transactions.map(\.transactionId))
        appendLiteral("::text[], ")
        appendInterpolation(transactions.map(\.productId))
        appendLiteral("::text[], ")
        appendInterpolation(transactions.map { Timestamp($0.purchasedAt) })
        appendLiteral("::timestamptz[], ")
        appendInterpolation(transactions.map { Timestamp($0.expiresAt) })
        appendLiteral("::timestamptz[], ")
        appendInterpolation(NullableArray(transactions.map { $0.revocation.map { Timestamp($0.at) } }))
        appendLiteral("::timestamptz[], ")
        appendInterpolation(transactions.map(\.environment.rawValue))
        appendLiteral("::text[], ")
        appendInterpolation(NullableArray(transactions.map { $0.price?.value }))
        appendLiteral("::int8[], ")
        appendInterpolation(NullableArray(transactions.map { $0.price?.currency }))
        appendLiteral("::text[], ")
        appendInterpolation(transactions.map(\.familyShared))
        appendLiteral("::bool[], ")
        appendInterpolation(transactions.map(\.periodsPerYear))
        appendLiteral("::int4[], ")
        appendInterpolation(NullableArray(transactions.map { $0.refunded?.value }))
        appendLiteral("::int8[], ")
        appendInterpolation(NullableArray(owned.map { $0.of.grants[$0.transaction.transactionId].map(Timestamp.init) }))
        appendLiteral("::timestamptz[]")
    }
}
