import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// `ledger verify`'s check of the order projections: every order folded from its events (`OrderFolds`) and compared
/// with its `orders` row and its `order_transactions` row, field by field; rows that no event explains; events the
/// domain cannot read. The seals are the verifier's (`LedgerVerifier`), for every kind alike.
struct OrderProjectionCheck: Sendable {
    let client: SessionPool
    let logger: Logger

    /// How many orders were folded, and where the projections drift from their folds.
    func run() async throws -> (streams: Int, drift: [VerificationReport.Drift]) {
        var drift: [VerificationReport.Drift] = []
        var orders = 0
        let unreadable = NotedDrift()
        var folds = OrderFolds(client: client, logger: logger)
        folds.unreadable = { unreadable.add(unreadable: $0.stream, version: $0.version, type: $0.type, error: $0.error) }
        try await folds.forEachBatch { folded, _ in
            orders += folded.count
            drift += try await compare(folded)
        }
        drift += try await orphans()
        drift += unreadable.drift
        return (orders, drift)
    }

    private func compare(_ folded: [Order]) async throws -> [VerificationReport.Drift] {
        guard !folded.isEmpty else { return [] }
        let ids = folded.map(\.orderId)
        var stored: [String: Order] = [:]
        for try await row in try await client.query(
            "SELECT \(unescaped: OrderRows.orderColumns) FROM orders WHERE order_id = ANY(\(ids))", .reads, logger: logger
        ) {
            let order = try OrderRows.decodeOrder(row)
            stored[order.orderId] = order
        }
        var transactions: [String: TransactionRow] = [:]
        for try await (transactionId, orderId, accountId, grantedAt, finishedAt, refundedAt) in try await client.query(
            """
            SELECT transaction_id, order_id, account_id, granted_at, finished_at, refunded_at
            FROM order_transactions WHERE order_id = ANY(\(ids))
            """, .reads, logger: logger
        ).decode((String, String, String, Date?, Date?, Date?).self) {
            transactions[orderId] = TransactionRow(
                transactionId: transactionId, orderId: orderId, accountId: accountId, grantedAt: grantedAt,
                finishedAt: finishedAt, refundedAt: refundedAt)
        }
        var drift: [VerificationReport.Drift] = []
        for order in folded {
            drift += ProjectionDrift.differences(table: "orders", key: order.orderId, stored: stored[order.orderId], folded: order)
            drift += ProjectionDrift.differences(
                table: "order_transactions", key: order.orderId, stored: transactions[order.orderId],
                folded: TransactionRow(order))
        }
        return drift
    }

    /// Projection rows that no event explains.
    private func orphans() async throws -> [VerificationReport.Drift] {
        var drift: [VerificationReport.Drift] = []
        for try await orderId in try await client.query(
            """
            SELECT order_id FROM orders o
            WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.kind = 'order' AND e.stream_id = o.order_id)
            """,
            .reads, logger: logger
        ).decode(String.self) {
            drift.append(.init(table: "orders", key: orderId, field: "(row)", stored: "present", folded: "no events"))
        }
        for try await (transactionId, orderId) in try await client.query(
            """
            SELECT t.transaction_id, t.order_id FROM order_transactions t
            WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.order_id = t.order_id AND o.transaction_id = t.transaction_id)
            """, .reads, logger: logger
        ).decode((String, String).self) {
            drift.append(.init(
                table: "order_transactions", key: transactionId, field: "(row)", stored: "bound to \(orderId)",
                folded: "no order bound to it"))
        }
        return drift
    }
}

/// A row of `order_transactions`, as stored or as implied by a folded order.
struct TransactionRow: Sendable, Hashable {
    var transactionId: String
    var orderId: String
    var accountId: String
    var grantedAt: Date?
    var finishedAt: Date?
    var refundedAt: Date?

    init(transactionId: String, orderId: String, accountId: String, grantedAt: Date?, finishedAt: Date?, refundedAt: Date?) {
        self.transactionId = transactionId
        self.orderId = orderId
        self.accountId = accountId
        self.grantedAt = grantedAt
        self.finishedAt = finishedAt
        self.refundedAt = refundedAt
    }

    /// The row a folded order implies; nil when the order is bound to no transaction.
    init?(_ order: Order) {
        guard let transactionId = order.transactionId else { return nil }
        self.init(
            transactionId: transactionId, orderId: order.orderId, accountId: order.accountId, grantedAt: order.grantedAt,
            finishedAt: order.finishedAt, refundedAt: order.refundedAt)
    }
}
