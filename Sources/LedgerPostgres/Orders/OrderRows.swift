import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The SQL of the inline projections: `orders` (one row per order, the fold of its events) and
/// `order_transactions` (which order a provider transactionId belongs to; its primary key decides races).
struct OrderRows: Sendable {
    let logger: Logger

    /// The column names, in `columns` order.
    static let orderColumns = columns.map(\.name).joined(separator: ", ")

    /// The orders upsert of the append's write statement, around its `SELECT` of the new row's values.
    static let upsertOrderSQL = "INSERT INTO orders (\(orderColumns))"
    static let upsertOrderConflictSQL = "ON CONFLICT (order_id) DO UPDATE SET "
        + columns.dropFirst().map { "\($0.name) = EXCLUDED.\($0.name)" }.joined(separator: ", ")

    /// The order columns of the grouped append's `o` (one array per column, `appendInterpolation(orderColumns:)`), each
    /// cast to its column's type.
    static let orderColumnsOfGroup = columns.map { "o." + $0.name + $0.cast }.joined(separator: ", ")

    /// The order columns as `o.…`, for a statement that joins `orders AS o`.
    static let orderColumnsOfO = columns.map { "o." + $0.name }.joined(separator: ", ")

    static func decodeOrder(_ row: PostgresRow) throws -> Order {
        guard let order = try decodeOrder(row.makeRandomAccess(), from: 0) else {
            throw CorruptRow(column: "order_id", value: "NULL")
        }
        return order
    }

    /// The order in the `orderColumns` starting at column `start`, read in `columns` order; nil when its order_id is NULL (an outer join
    /// that found no order).
    static func decodeOrder(_ columns: PostgresRandomAccessRow, from start: Int) throws -> Order? {
        var index = start
        func next<Value: PostgresDecodable>(_ type: Value.Type = Value.self) throws -> Value {
            defer { index += 1 }
            return try columns[index].decode(Value.self)
        }
        guard let orderId = try next(String?.self) else { return nil }
        let accountId: String = try next(), productId: String = try next(), quantity: Int = try next()
        let amount = Money(value: try next(Int64.self), currency: try next(String.self))
        let provider = try decodeEnum(Provider.self, try next(), column: "provider")
        let environment = try decodeEnum(PurchaseEnvironment.self, try next(), column: "environment")
        let appAccountToken: UUID? = try next()
        let state = try decodeEnum(OrderState.self, try next(), column: "state")
        let version: Int = try next(), transactionId: String? = try next()
        let flags = try (try next([String].self)).map { try decodeEnum(OrderFlag.self, $0, column: "flags") }
        let verificationAttempts: Int = try next(), lastErrorCode: String? = try next()
        let refundedValue: Int64? = try next(), refundedCurrency: String? = try next()
        return Order(
            orderId: orderId, accountId: accountId, productId: productId, quantity: quantity, amount: amount,
            provider: provider, environment: environment, appAccountToken: appAccountToken, state: state,
            version: version, transactionId: transactionId, flags: flags, verificationAttempts: verificationAttempts,
            lastErrorCode: lastErrorCode,
            refundedAmount: zip(refundedValue, refundedCurrency).map { Money(value: $0, currency: $1) },
            createdAt: try next(), updatedAt: try next(), grantedAt: try next(), finishedAt: try next(),
            refundedAt: try next())
    }

    private static func decodeEnum<Value: RawRepresentable<String>>(_ type: Value.Type, _ raw: String, column: String) throws -> Value {
        guard let value = Value(rawValue: raw) else { throw CorruptRow(column: column, value: raw) }
        return value
    }
}

private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
