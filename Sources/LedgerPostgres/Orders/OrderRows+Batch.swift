import Foundation
import LedgerCore
import PostgresNIO

extension OrderRows {
    /// Copies many folded orders, and the transaction rows they imply, into the rebuild's tables with `COPY … FROM
    /// STDIN`: PostgreSQL's cheapest way to fill a table (measured in BENCHMARKS.md, stop 33).
    func insertAll(
        _ orders: [Order], ordersTable: String, transactionsTable: String, on connection: PostgresConnection
    ) async throws {
        guard !orders.isEmpty else { return }
        try await copy(orders, into: ordersTable, columns: Self.columns.map(\.name), on: connection) { rows, order in
            for column in Self.columns { column.copy(&rows, order) }
        }
        let bound = orders.filter { $0.transactionId != nil }
        guard !bound.isEmpty else { return }
        try await copy(
            bound, into: transactionsTable,
            columns: ["transaction_id", "order_id", "account_id", "granted_at", "finished_at", "refunded_at"],
            on: connection
        ) { rows, order in
            rows.append(order.transactionId)
            rows.append(order.orderId)
            rows.append(order.accountId)
            rows.append(order.grantedAt)
            rows.append(order.finishedAt)
            rows.append(order.refundedAt)
        }
    }

    /// One row of `table` per order, sent `CopyTextRows.sendSize` bytes or so at a time.
    private func copy(
        _ orders: [Order], into table: String, columns: [String], on connection: PostgresConnection,
        row: (inout CopyTextRows, Order) -> Void
    ) async throws {
        try await connection.copy(into: table, columns: columns, logger: logger) { writer in
            var rows = CopyTextRows()
            for order in orders {
                row(&rows, order)
                rows.endRow()
                if rows.bytes.count >= CopyTextRows.sendSize { try await writer.write(rows.take()) }
            }
            if !rows.bytes.isEmpty { try await writer.write(rows.take()) }
        }
    }
}
