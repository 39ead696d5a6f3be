import Foundation
import LedgerCore
import PostgresNIO

/// The order's projection in the append's statements (`StreamProjection`): the read takes the order's `orders` row
/// and the `order_transactions` bindings of the transactions its new events name; the write upserts the row and
/// binds the order's transaction, and its check aborts the statement when another order claimed that transaction
/// since the read (schema/008).
enum OrderProjection: StreamProjection {
    /// What a decision on an order starts from beside its version (`OrderBatch.Start`).
    struct Read: Sendable {
        /// Nil: no order yet.
        let order: Order?
        /// Who holds each transactionId the new events name.
        let bindings: [String: TransactionBinding]
    }

    static let kind = StreamKind.order

    static let readColumns = "bound.ids, bound.orders, bound.granted, " + OrderRows.orderColumnsOfO

    static func readJoins(claims transactionIds: [String], into sql: inout PostgresQuery.StringInterpolation) {
        sql.appendLiteral("""
            LEFT JOIN orders o ON o.order_id = wanted.stream_id
            CROSS JOIN LATERAL (
                SELECT array_agg(t.transaction_id) AS ids, array_agg(t.order_id) AS orders,
                       array_agg(t.granted_at IS NOT NULL) AS granted
                FROM order_transactions t WHERE t.transaction_id = ANY(
            """)
        sql.appendInterpolation(transactionIds)
        sql.appendLiteral("::text[])\n) bound")
    }

    static func decodeRead(_ columns: PostgresRandomAccessRow, from index: Int, stream id: String) throws -> Read {
        let boundIds = try columns[index].decode([String]?.self) ?? []
        let boundOrders = try columns[index + 1].decode([String]?.self) ?? []
        let granted = try columns[index + 2].decode([Bool]?.self) ?? []
        var bindings: [String: TransactionBinding] = [:]
        for (offset, transactionId) in boundIds.enumerated() where boundOrders.indices.contains(offset) && granted.indices.contains(offset) {
            bindings[transactionId] = TransactionBinding(
                transactionId: transactionId, orderId: boundOrders[offset], granted: granted[offset])
        }
        return Read(order: try OrderRows.decodeOrder(columns, from: index + 3), bindings: bindings)
    }

    static let noStream = Read(order: nil, bindings: [:])

    /// The order this node's last write left, and its own transaction's binding.
    static func read(after order: Order, stream id: String) -> Read {
        let bindings = order.transactionId.map { transactionId in
            [transactionId: TransactionBinding(transactionId: transactionId, orderId: id, granted: order.grantedAt != nil)]
        }
        return Read(order: order, bindings: bindings ?? [:])
    }

    static func startsStream(firstEventType type: String) -> Bool { type == EventType.orderCreated.rawValue }

    static func write(_ order: Order?, stream id: String, into sql: inout PostgresQuery.StringInterpolation) {
        let transactionId = order?.transactionId
        sql.appendLiteral(", projected AS (\n" + OrderRows.upsertOrderSQL + "\nSELECT ")
        sql.appendInterpolation(orderRow: order)
        sql.appendLiteral("\nWHERE ")
        sql.appendInterpolation(order != nil)
        sql.appendLiteral(" AND EXISTS (SELECT 1 FROM won)\n" + OrderRows.upsertOrderConflictSQL + "\n), bound AS (\n")
        sql.appendLiteral("""
            INSERT INTO order_transactions AS t (transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)
            SELECT
            """)
        sql.appendLiteral(" ")
        sql.appendInterpolation(transactionId)
        sql.appendLiteral("::text, ")
        sql.appendInterpolation(order?.orderId)
        sql.appendLiteral("::text, ")
        sql.appendInterpolation(order?.accountId)
        sql.appendLiteral("::text, ")
        sql.appendInterpolation(order?.grantedAt.timestamp)
        sql.appendLiteral("::timestamptz, ")
        sql.appendInterpolation(order?.finishedAt.timestamp)
        sql.appendLiteral("::timestamptz, ")
        sql.appendInterpolation(order?.refundedAt.timestamp)
        sql.appendLiteral("::timestamptz\nWHERE ")
        sql.appendInterpolation(transactionId)
        sql.appendLiteral("""
            ::text IS NOT NULL AND EXISTS (SELECT 1 FROM won)
            ON CONFLICT (transaction_id) DO UPDATE SET
                granted_at = EXCLUDED.granted_at, finished_at = EXCLUDED.finished_at, refunded_at = EXCLUDED.refunded_at
                WHERE t.order_id = EXCLUDED.order_id
            RETURNING 1
            )
            """)
        sql.appendLiteral("\n")
    }

    static func writeCheck(_ order: Order?, into sql: inout PostgresQuery.StringInterpolation) {
        let transactionId = order?.transactionId
        sql.appendLiteral("ledger_append_requires(")
        sql.appendInterpolation(transactionId)
        sql.appendLiteral("::text IS NULL OR EXISTS (SELECT 1 FROM bound), 'transaction ' || ")
        sql.appendInterpolation(transactionId)
        sql.appendLiteral("::text || ' claimed by another order')")
    }

    static func groupWrite(_ orders: [Order], into sql: inout PostgresQuery.StringInterpolation) {
        sql.appendLiteral(", o AS (\nSELECT * FROM unnest(")
        sql.appendInterpolation(orderColumns: orders)
        sql.appendLiteral(")\nWITH ORDINALITY AS o(" + OrderRows.orderColumns + ", n)\n), projected AS (\n")
        sql.appendLiteral(OrderRows.upsertOrderSQL + "\nSELECT " + OrderRows.orderColumnsOfGroup + " FROM o JOIN won USING (n)\n")
        sql.appendLiteral(OrderRows.upsertOrderConflictSQL + "\n")
        sql.appendLiteral("""
            ), bound AS (
                INSERT INTO order_transactions AS t (transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)
                SELECT o.transaction_id, o.order_id, o.account_id, o.granted_at, o.finished_at, o.refunded_at
                FROM o JOIN won USING (n)
                WHERE o.transaction_id IS NOT NULL
                ON CONFLICT (transaction_id) DO UPDATE SET
                    granted_at = EXCLUDED.granted_at, finished_at = EXCLUDED.finished_at, refunded_at = EXCLUDED.refunded_at
                    WHERE t.order_id = EXCLUDED.order_id
                RETURNING order_id
            )

            """)
    }

    /// Per appended event, its order's transaction bound to it (`w.n` is the order's `o.n`).
    static let groupWriteJoins = "JOIN o USING (n)"
    static let groupWriteCheck = """
        ledger_append_requires(o.transaction_id IS NULL OR EXISTS (SELECT 1 FROM bound b WHERE b.order_id = o.order_id),
                               'transaction ' || o.transaction_id || ' claimed by another order')
        """
}
