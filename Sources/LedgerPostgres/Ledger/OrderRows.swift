import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The SQL of the inline projections: `orders` (one row per order, the fold of its events) and
/// `order_transactions` (which order a provider transactionId belongs to; its primary key decides races).
struct OrderRows: Sendable {
    let logger: Logger

    /// Inside an append: decides each event against the order as projected, folds the accepted events, and
    /// writes the new rows. Throws the first `Refusal`; nothing is written then.
    func decideAndProject(_ events: [OrderEvent], in context: AppendContext) async throws -> Order {
        let connection = context.connection
        var order = try await load(context.orderId, on: connection)
        var bindings = try await bindings(for: events.compactMap(\.transactionId), on: connection)
        for (offset, event) in events.enumerated() {
            let binding = event.transactionId.flatMap { bindings[$0] }
            if let refusal = OrderDecider.decide(order, event, orderId: context.orderId, binding: binding) {
                throw RefusedEvent(refusal: refusal, event: event)
            }
            let recorded = RecordedOrderEvent(
                orderId: context.orderId, version: context.currentVersion + offset + 1, event: event,
                recordedAt: context.recordedAt)
            order = OrderDecider.evolve(order, recorded)
            if let order, let transactionId = order.transactionId {
                bindings[transactionId] = TransactionBinding(
                    transactionId: transactionId, orderId: order.orderId, granted: order.grantedAt != nil)
            }
        }
        // Unreachable (the decider refuses anything but order.created on no order), but a throw, never a trap.
        guard let order else { throw CorruptRow(column: "order_id", value: context.orderId) }
        try await save(order, on: connection)
        return order
    }

    static let orderColumns = """
        order_id, account_id, product_id, quantity, amount_value, currency, provider, environment, app_account_token,
        state, version, transaction_id, flags, verification_attempts, last_error_code, refunded_value, refunded_currency,
        created_at, updated_at, granted_at, finished_at, refunded_at
        """

    func load(_ orderId: String, on connection: PostgresConnection) async throws -> Order? {
        let rows = try await connection.query(
            "SELECT \(unescaped: Self.orderColumns) FROM orders WHERE order_id = \(orderId)", logger: logger)
        for try await row in rows { return try Self.decodeOrder(row) }
        return nil
    }

    private func bindings(for transactionIds: [String], on connection: PostgresConnection) async throws -> [String: TransactionBinding] {
        guard !transactionIds.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT transaction_id, order_id, granted_at IS NOT NULL FROM order_transactions
            WHERE transaction_id = ANY(\(transactionIds))
            """, logger: logger)
        var bindings: [String: TransactionBinding] = [:]
        for try await (transactionId, orderId, granted) in rows.decode((String, String, Bool).self) {
            bindings[transactionId] = TransactionBinding(transactionId: transactionId, orderId: orderId, granted: granted)
        }
        return bindings
    }

    /// Upserts the order's rows. If another order took the transactionId since we looked (a concurrent append),
    /// the upsert's `WHERE` finds it is not ours: the append is rerun and the domain refuses it properly.
    func save(_ order: Order, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO orders (\(unescaped: Self.orderColumns))
            VALUES (\(order.orderId), \(order.accountId), \(order.productId), \(order.quantity), \(order.amount.value),
                    \(order.amount.currency), \(order.provider.rawValue), \(order.environment.rawValue), \(order.appAccountToken),
                    \(order.state.rawValue), \(order.version), \(order.transactionId), \(order.flags.map(\.rawValue)),
                    \(order.verificationAttempts), \(order.lastErrorCode), \(order.refundedAmount?.value),
                    \(order.refundedAmount?.currency), \(Timestamp(order.createdAt)), \(Timestamp(order.updatedAt)),
                    \(order.grantedAt.timestamp), \(order.finishedAt.timestamp), \(order.refundedAt.timestamp))
            ON CONFLICT (order_id) DO UPDATE SET
                account_id = EXCLUDED.account_id, product_id = EXCLUDED.product_id, quantity = EXCLUDED.quantity,
                amount_value = EXCLUDED.amount_value, currency = EXCLUDED.currency, provider = EXCLUDED.provider,
                environment = EXCLUDED.environment, app_account_token = EXCLUDED.app_account_token, state = EXCLUDED.state,
                version = EXCLUDED.version, transaction_id = EXCLUDED.transaction_id, flags = EXCLUDED.flags,
                verification_attempts = EXCLUDED.verification_attempts, last_error_code = EXCLUDED.last_error_code,
                refunded_value = EXCLUDED.refunded_value, refunded_currency = EXCLUDED.refunded_currency,
                created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, granted_at = EXCLUDED.granted_at,
                finished_at = EXCLUDED.finished_at, refunded_at = EXCLUDED.refunded_at
            """, logger: logger)
        guard let transactionId = order.transactionId else { return }
        let owned = try await connection.query(
            """
            INSERT INTO order_transactions AS t (transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)
            VALUES (\(transactionId), \(order.orderId), \(order.accountId), \(order.grantedAt.timestamp),
                    \(order.finishedAt.timestamp), \(order.refundedAt.timestamp))
            ON CONFLICT (transaction_id) DO UPDATE SET
                granted_at = EXCLUDED.granted_at, finished_at = EXCLUDED.finished_at, refunded_at = EXCLUDED.refunded_at
                WHERE t.order_id = EXCLUDED.order_id
            RETURNING 1
            """, logger: logger)
        var isOurs = false
        for try await _ in owned { isOurs = true }
        guard isOurs else { throw AppendRaceLost() }
    }

    static func decodeOrder(_ row: PostgresRow) throws -> Order {
        let (orderId, accountId, productId, quantity, amountValue, currency, provider, environment, appAccountToken) =
            try row.decode((String, String, String, Int, Int64, String, String, String, UUID?).self)
        let columns = row.makeRandomAccess()
        let state = try columns["state"].decode(String.self)
        let flags = try columns["flags"].decode([String].self)
        let refundedValue = try columns["refunded_value"].decode(Int64?.self)
        let refundedCurrency = try columns["refunded_currency"].decode(String?.self)
        return Order(
            orderId: orderId, accountId: accountId, productId: productId, quantity: quantity,
            amount: Money(value: amountValue, currency: currency),
            provider: try decodeEnum(Provider.self, provider, column: "provider"),
            environment: try decodeEnum(PurchaseEnvironment.self, environment, column: "environment"),
            appAccountToken: appAccountToken,
            state: try decodeEnum(OrderState.self, state, column: "state"),
            version: try columns["version"].decode(Int.self),
            transactionId: try columns["transaction_id"].decode(String?.self),
            flags: try flags.map { try decodeEnum(OrderFlag.self, $0, column: "flags") },
            verificationAttempts: try columns["verification_attempts"].decode(Int.self),
            lastErrorCode: try columns["last_error_code"].decode(String?.self),
            refundedAmount: zip(refundedValue, refundedCurrency).map { Money(value: $0, currency: $1) },
            createdAt: try columns["created_at"].decode(Date.self),
            updatedAt: try columns["updated_at"].decode(Date.self),
            grantedAt: try columns["granted_at"].decode(Date?.self),
            finishedAt: try columns["finished_at"].decode(Date?.self),
            refundedAt: try columns["refunded_at"].decode(Date?.self))
    }

    private static func decodeEnum<Value: RawRepresentable<String>>(_ type: Value.Type, _ raw: String, column: String) throws -> Value {
        guard let value = Value(rawValue: raw) else { throw CorruptRow(column: column, value: raw) }
        return value
    }
}

/// A projection row holding a value the domain does not know: the schema and the code disagree.
struct CorruptRow: Error, CustomStringConvertible {
    let column: String
    let value: String
    var description: String { "projection column \(column) holds unknown value \(value)" }
}

private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
