import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// `ledger verify`'s check of the subscription projections: every subscription folded from its events
/// (`StreamFolds<SubscriptionStream>`) and compared with its `subscriptions` row and its `subscription_transactions`
/// rows; rows that no event explains; events the domain cannot read.
struct SubscriptionProjectionCheck: Sendable {
    let client: SessionPool
    let logger: Logger

    /// A `subscription_transactions` row, as stored or as a folded subscription implies it. Its times are compared
    /// as stored, to the microsecond: the fold reads them from the events' JSON and the row from PostgreSQL, and the
    /// same microsecond converted each way can differ in a `Date`'s last bit.
    struct TransactionRow: Sendable, Hashable {
        var subscriptionId: String
        var productId: String
        var purchasedAt: Date
        var expiresAt: Date
        var revokedAt: Date?
        var environment: String
        var priceValue: Int64?
        var currency: String?
        var familyShared: Bool
        var periodsPerYear: Int
        var refundedValue: Int64?
        var grantedAt: Date?

        init(
            subscriptionId: String, productId: String, purchasedAt: Date, expiresAt: Date, revokedAt: Date?,
            environment: String, priceValue: Int64?, currency: String?, familyShared: Bool, periodsPerYear: Int,
            refundedValue: Int64?, grantedAt: Date?
        ) {
            self.subscriptionId = subscriptionId
            self.productId = productId
            self.purchasedAt = Timestamp(purchasedAt).stored
            self.expiresAt = Timestamp(expiresAt).stored
            self.revokedAt = revokedAt.map { Timestamp($0).stored }
            self.environment = environment
            self.priceValue = priceValue
            self.currency = currency
            self.familyShared = familyShared
            self.periodsPerYear = periodsPerYear
            self.refundedValue = refundedValue
            self.grantedAt = grantedAt.map { Timestamp($0).stored }
        }

        /// The row a folded subscription's transaction implies.
        init(_ transaction: SubscriptionTransaction, of subscription: Subscription) {
            self.init(
                subscriptionId: subscription.subscriptionId, productId: transaction.productId, purchasedAt: transaction.purchasedAt,
                expiresAt: transaction.expiresAt, revokedAt: transaction.revocation?.at,
                environment: transaction.environment.rawValue, priceValue: transaction.price?.value,
                currency: transaction.price?.currency, familyShared: transaction.familyShared,
                periodsPerYear: transaction.periodsPerYear, refundedValue: transaction.refunded?.value,
                grantedAt: subscription.grants[transaction.transactionId])
        }
    }

    /// How many subscriptions were folded, and where the projections drift from their folds.
    func run() async throws -> (streams: Int, drift: [VerificationReport.Drift]) {
        var drift: [VerificationReport.Drift] = []
        var count = 0
        let noted = NotedDrift()
        var folds = StreamFolds<SubscriptionStream>(client: client, logger: logger)
        folds.unreadable = { noted.add(unreadable: $0.stream, version: $0.version, type: $0.type, error: $0.error) }
        try await folds.forEachBatch { folded, _ in
            count += folded.count
            drift += try await compare(folded)
        }
        drift += try await orphans()
        return (count, drift + noted.drift)
    }

    private func compare(_ folded: [Subscription]) async throws -> [VerificationReport.Drift] {
        guard !folded.isEmpty else { return [] }
        let ids = folded.map(\.subscriptionId)
        var stored: [String: Row] = [:]
        for try await row in try await client.query(
            """
            SELECT \(unescaped: SubscriptionRows.columnsOfSub), sub.period_ends_at
            FROM subscriptions sub WHERE sub.subscription_id = ANY(\(ids))
            """, .reads, logger: logger
        ) {
            let columns = row.makeRandomAccess()
            if let subscription = try SubscriptionRows.decode(columns, from: 0) {
                var kept = Row(subscription)
                kept.periodEndsAt = try columns[6].decode(Date?.self).map { Timestamp($0).stored }
                stored[subscription.subscriptionId] = kept
            }
        }
        var transactions: [String: TransactionRow] = [:]
        for try await row in try await client.query(
            """
            SELECT transaction_id, subscription_id, product_id, purchased_at, expires_at, revoked_at, environment,
                   price_value, currency, family_shared, periods_per_year, refunded_value, granted_at
            FROM subscription_transactions WHERE subscription_id = ANY(\(ids))
            """, .reads, logger: logger
        ) {
            let columns = row.makeRandomAccess()
            transactions[try columns[0].decode(String.self)] = TransactionRow(
                subscriptionId: try columns[1].decode(String.self), productId: try columns[2].decode(String.self),
                purchasedAt: try columns[3].decode(Date.self), expiresAt: try columns[4].decode(Date.self),
                revokedAt: try columns[5].decode(Date?.self), environment: try columns[6].decode(String.self),
                priceValue: try columns[7].decode(Int64?.self), currency: try columns[8].decode(String?.self),
                familyShared: try columns[9].decode(Bool.self), periodsPerYear: try columns[10].decode(Int.self),
                refundedValue: try columns[11].decode(Int64?.self), grantedAt: try columns[12].decode(Date?.self))
        }
        var drift: [VerificationReport.Drift] = []
        for subscription in folded {
            let key = subscription.subscriptionId
            drift += ProjectionDrift.differences(
                table: "subscriptions", key: key, stored: stored[key], folded: Row(subscription))
            for transaction in subscription.transactions.values {
                drift += ProjectionDrift.differences(
                    table: "subscription_transactions", key: transaction.transactionId,
                    stored: transactions.removeValue(forKey: transaction.transactionId),
                    folded: TransactionRow(transaction, of: subscription))
            }
        }
        // Bound to one of these subscriptions, but in none of their folds.
        for (transactionId, row) in transactions {
            drift.append(.init(
                table: "subscription_transactions", key: transactionId, field: "(row)",
                stored: "bound to \(row.subscriptionId)", folded: "not a transaction of it"))
        }
        return drift
    }

    /// What a `subscriptions` row holds, compared field by field.
    struct Row: Sendable, Hashable {
        var accountId: String?
        var orderId: String?
        var facts: String
        var version: Int
        var updatedAt: Date
        /// Compared as stored, to the microsecond (as `TransactionRow`'s times).
        var periodEndsAt: Date?

        init(_ subscription: Subscription) {
            accountId = subscription.accountId
            orderId = subscription.orderId
            facts = subscription.factsJSON.canonicalJSON
            version = subscription.version
            updatedAt = subscription.updatedAt
            periodEndsAt = subscription.periodEndsAt.map { Timestamp($0).stored }
        }
    }

    /// Projection rows that no event explains.
    private func orphans() async throws -> [VerificationReport.Drift] {
        var drift: [VerificationReport.Drift] = []
        for try await id in try await client.query(
            """
            SELECT subscription_id FROM subscriptions s
            WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.kind = 'subscription' AND e.stream_id = s.subscription_id)
            """, .reads, logger: logger
        ).decode(String.self) {
            drift.append(.init(table: "subscriptions", key: id, field: "(row)", stored: "present", folded: "no events"))
        }
        for try await (transactionId, id) in try await client.query(
            """
            SELECT t.transaction_id, t.subscription_id FROM subscription_transactions t
            WHERE NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.subscription_id = t.subscription_id)
            """, .reads, logger: logger
        ).decode((String, String).self) {
            drift.append(.init(
                table: "subscription_transactions", key: transactionId, field: "(row)", stored: "bound to \(id)",
                folded: "no subscription"))
        }
        return drift
    }
}
