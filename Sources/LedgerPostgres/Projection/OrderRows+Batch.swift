import Foundation
import LedgerCore
import PostgresNIO

extension OrderRows {
    /// Inserts many folded orders, and the transaction rows they imply, in two statements (for `rebuild`): columns
    /// travel as parallel arrays (`OrderRowColumn.values`).
    func insertAll(
        _ orders: [Order], ordersTable: String, transactionsTable: String, on connection: PostgresConnection
    ) async throws {
        guard !orders.isEmpty else { return }
        let time = { (values: [Date?]) in values.map(TimestampElement.init) }
        try await connection.query(
            "INSERT INTO \(unescaped: ordersTable) (\(unescaped: Self.orderColumns)) \(orderRows: orders)", logger: logger)
        let bound = orders.compactMap { order in order.transactionId.map { (transactionId: $0, order: order) } }
        guard !bound.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO \(unescaped: transactionsTable) (transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)
            SELECT t.transaction_id, t.order_id, t.account_id, NULLIF(t.granted_at, '-infinity'),
                   NULLIF(t.finished_at, '-infinity'), NULLIF(t.refunded_at, '-infinity')
            FROM unnest(
                \(bound.map(\.transactionId))::text[], \(bound.map(\.order.orderId))::text[],
                \(bound.map(\.order.accountId))::text[], \(time(bound.map(\.order.grantedAt))),
                \(time(bound.map(\.order.finishedAt))), \(time(bound.map(\.order.refundedAt)))
            ) AS t(transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)
            """, logger: logger)
    }
}
