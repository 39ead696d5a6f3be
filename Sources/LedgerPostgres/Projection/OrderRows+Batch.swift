import Foundation
import LedgerCore
import PostgresNIO

extension OrderRows {
    /// Inserts many folded orders, and the transaction rows they imply, in two statements (for `rebuild`).
    /// Columns travel as parallel arrays; PostgresNIO binds no arrays of optionals, so optional values travel as
    /// text with '' for NULL, and optional times as binary `timestamptz` with `-infinity` for NULL (`TimestampElement`).
    func insertAll(
        _ orders: [Order], ordersTable: String, transactionsTable: String, on connection: PostgresConnection
    ) async throws {
        guard !orders.isEmpty else { return }
        let text = { (values: [String?]) in values.map { $0 ?? "" } }
        let time = { (values: [Date?]) in values.map(TimestampElement.init) }
        try await connection.query(
            """
            INSERT INTO \(unescaped: ordersTable) (\(unescaped: Self.orderColumns))
            SELECT o.order_id, o.account_id, o.product_id, o.quantity, o.amount_value, o.currency, o.provider,
                   o.environment, NULLIF(o.app_account_token, '')::uuid, o.state, o.version,
                   NULLIF(o.transaction_id, ''), COALESCE(string_to_array(NULLIF(o.flags, ''), ','), '{}'),
                   o.verification_attempts, NULLIF(o.last_error_code, ''), NULLIF(o.refunded_value, '')::bigint,
                   NULLIF(o.refunded_currency, ''), o.created_at, o.updated_at,
                   NULLIF(o.granted_at, '-infinity'), NULLIF(o.finished_at, '-infinity'),
                   NULLIF(o.refunded_at, '-infinity')
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
                \(time(orders.map(\.createdAt))), \(time(orders.map(\.updatedAt))),
                \(time(orders.map(\.grantedAt))), \(time(orders.map(\.finishedAt))),
                \(time(orders.map(\.refundedAt)))
            ) AS o(order_id, account_id, product_id, quantity, amount_value, currency, provider, environment,
                   app_account_token, state, version, transaction_id, flags, verification_attempts, last_error_code,
                   refunded_value, refunded_currency, created_at, updated_at, granted_at, finished_at, refunded_at)
            """, logger: logger)
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
