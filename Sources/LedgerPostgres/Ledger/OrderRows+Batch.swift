import Foundation
import LedgerCore
import PostgresNIO

extension OrderRows {
    /// Inserts many folded orders, and the transaction rows they imply, in two statements (for `rebuild`).
    /// Columns travel as parallel arrays; optional values travel as text, with '' for NULL, because PostgresNIO
    /// binds no arrays of optionals.
    func insertAll(
        _ orders: [Order], ordersTable: String, transactionsTable: String, on connection: PostgresConnection
    ) async throws {
        guard !orders.isEmpty else { return }
        let text = { (values: [String?]) in values.map { $0 ?? "" } }
        let time = { (values: [Date?]) in values.map { $0.map(RFC3339.format) ?? "" } }
        try await connection.query(
            """
            INSERT INTO \(unescaped: ordersTable) (\(unescaped: Self.orderColumns))
            SELECT o.order_id, o.account_id, o.product_id, o.quantity, o.amount_value, o.currency, o.provider,
                   o.environment, NULLIF(o.app_account_token, '')::uuid, o.state, o.version,
                   NULLIF(o.transaction_id, ''), COALESCE(string_to_array(NULLIF(o.flags, ''), ','), '{}'),
                   o.verification_attempts, NULLIF(o.last_error_code, ''), NULLIF(o.refunded_value, '')::bigint,
                   NULLIF(o.refunded_currency, ''), o.created_at::timestamptz, o.updated_at::timestamptz,
                   NULLIF(o.granted_at, '')::timestamptz, NULLIF(o.finished_at, '')::timestamptz,
                   NULLIF(o.refunded_at, '')::timestamptz
            FROM unnest(
                \(orders.map(\.orderId))::text[], \(orders.map(\.accountId))::text[], \(orders.map(\.productId))::text[],
                \(orders.map(\.quantity))::int[], \(orders.map(\.amount.value))::int8[], \(orders.map(\.amount.currency))::text[],
                \(orders.map(\.provider.rawValue))::text[], \(orders.map(\.environment.rawValue))::text[],
                \(text(orders.map { $0.appAccountToken?.uuidString }))::text[], \(orders.map(\.state.rawValue))::text[],
                \(orders.map(\.version))::int[], \(text(orders.map(\.transactionId)))::text[],
                \(orders.map { $0.flags.map(\.rawValue).joined(separator: ",") })::text[],
                \(orders.map(\.verificationAttempts))::int[], \(text(orders.map(\.lastErrorCode)))::text[],
                \(text(orders.map { $0.refundedAmount.map { String($0.value) } }))::text[],
                \(text(orders.map(\.refundedAmount?.currency)))::text[],
                \(time(orders.map(\.createdAt)))::text[], \(time(orders.map(\.updatedAt)))::text[],
                \(time(orders.map(\.grantedAt)))::text[], \(time(orders.map(\.finishedAt)))::text[],
                \(time(orders.map(\.refundedAt)))::text[]
            ) AS o(order_id, account_id, product_id, quantity, amount_value, currency, provider, environment,
                   app_account_token, state, version, transaction_id, flags, verification_attempts, last_error_code,
                   refunded_value, refunded_currency, created_at, updated_at, granted_at, finished_at, refunded_at)
            """, logger: logger)
        let bound = orders.compactMap { order in order.transactionId.map { (transactionId: $0, order: order) } }
        guard !bound.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO \(unescaped: transactionsTable) (transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)
            SELECT t.transaction_id, t.order_id, t.account_id, NULLIF(t.granted_at, '')::timestamptz,
                   NULLIF(t.finished_at, '')::timestamptz, NULLIF(t.refunded_at, '')::timestamptz
            FROM unnest(
                \(bound.map(\.transactionId))::text[], \(bound.map(\.order.orderId))::text[],
                \(bound.map(\.order.accountId))::text[], \(time(bound.map(\.order.grantedAt)))::text[],
                \(time(bound.map(\.order.finishedAt)))::text[], \(time(bound.map(\.order.refundedAt)))::text[]
            ) AS t(transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)
            """, logger: logger)
    }
}
