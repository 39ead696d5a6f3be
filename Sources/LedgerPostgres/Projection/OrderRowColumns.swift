import Foundation
import LedgerCore
import PostgresNIO

/// The `orders` row, column by column, in one list: its name and SQL type, how an order fills it in the append's write
/// statement, and how many orders fill it at once in the rebuild's bulk insert. Every statement that names the
/// columns or binds their values is built from this list; `OrderRows.decodeOrder` reads them back in this order.
struct OrderRowColumn: Sendable {
    typealias Interpolation = PostgresQuery.StringInterpolation

    let name: String
    let type: String
    /// Binds one order's value (NULL for no order).
    let value: @Sendable (inout Interpolation, Order?) -> Void
    /// Binds the values of many orders as one array, and the expression that turns an element back into the
    /// column's value: PostgresNIO binds no arrays of optionals, so an optional travels as text with '' for NULL, an
    /// optional time as binary `timestamptz` with `-infinity` for NULL (`TimestampElement`).
    let values: @Sendable (inout Interpolation, [Order]) -> Void
    let fromElement: String
    /// `::type`, made once: the append's write statement is built on every append.
    let cast: String

    init(
        name: String, type: String, value: @escaping @Sendable (inout Interpolation, Order?) -> Void,
        values: @escaping @Sendable (inout Interpolation, [Order]) -> Void, fromElement: String
    ) {
        self.name = name
        self.type = type
        self.value = value
        self.values = values
        self.fromElement = fromElement
        self.cast = "::" + type
    }

    /// A column whose value is never NULL in a row: bound as an array of `type`.
    static func plain<Value: PostgresArrayEncodable & PostgresNonThrowingEncodable & Sendable>(
        _ name: String, _ type: String, _ read: @escaping @Sendable (Order) -> Value
    ) -> OrderRowColumn {
        OrderRowColumn(
            name: name, type: type,
            value: { query, order in query.appendInterpolation(order.map(read)) },
            values: { query, orders in
                query.appendInterpolation(orders.map(read))
                query.appendLiteral("::\(type)[]")
            },
            fromElement: "o.\(name)")
    }

    /// An optional column, bound in bulk as text ('' for NULL) and cast back.
    static func optionalText<Value: PostgresNonThrowingEncodable & Sendable>(
        _ name: String, _ type: String, _ read: @escaping @Sendable (Order) -> Value?, text: @escaping @Sendable (Value) -> String
    ) -> OrderRowColumn {
        OrderRowColumn(
            name: name, type: type,
            value: { query, order in query.appendInterpolation(order.flatMap(read)) },
            values: { query, orders in
                query.appendInterpolation(orders.map { read($0).map(text) ?? "" })
                query.appendLiteral("::text[]")
            },
            fromElement: type == "text" ? "NULLIF(o.\(name), '')" : "NULLIF(o.\(name), '')::\(type)")
    }

    /// A time column, optional or not, bound in bulk as binary `timestamptz` (`-infinity` for NULL).
    static func time(_ name: String, _ read: @escaping @Sendable (Order) -> Date?) -> OrderRowColumn {
        OrderRowColumn(
            name: name, type: "timestamptz",
            value: { query, order in query.appendInterpolation(order.flatMap(read).timestamp) },
            values: { query, orders in query.appendInterpolation(orders.map { TimestampElement(read($0)) }) },
            fromElement: "NULLIF(o.\(name), '-infinity')")
    }
}

extension OrderRows {
    static let columns: [OrderRowColumn] = [
        .plain("order_id", "text") { $0.orderId },
        .plain("account_id", "text") { $0.accountId },
        .plain("product_id", "text") { $0.productId },
        .plain("quantity", "int8") { Int64($0.quantity) },
        .plain("amount_value", "int8") { $0.amount.value },
        .plain("currency", "text") { $0.amount.currency },
        .plain("provider", "text") { $0.provider.rawValue },
        .plain("environment", "text") { $0.environment.rawValue },
        .optionalText("app_account_token", "uuid", { $0.appAccountToken }, text: \.uuidString),
        .plain("state", "text") { $0.state.rawValue },
        .plain("version", "int8") { Int64($0.version) },
        .optionalText("transaction_id", "text", { $0.transactionId }, text: { $0 }),
        OrderRowColumn(
            name: "flags", type: "text[]",
            value: { query, order in query.appendInterpolation(order?.flags.map(\.rawValue)) },
            values: { query, orders in
                query.appendInterpolation(orders.map { $0.flags.map(\.rawValue).joined(separator: ",") })
                query.appendLiteral("::text[]")
            },
            fromElement: "COALESCE(string_to_array(NULLIF(o.flags, ''), ','), '{}')"),
        .plain("verification_attempts", "int8") { Int64($0.verificationAttempts) },
        .optionalText("last_error_code", "text", { $0.lastErrorCode }, text: { $0 }),
        .optionalText("refunded_value", "int8", { $0.refundedAmount?.value }, text: { String($0) }),
        .optionalText("refunded_currency", "text", { $0.refundedAmount?.currency }, text: { $0 }),
        .time("created_at") { $0.createdAt },
        .time("updated_at") { $0.updatedAt },
        .time("granted_at") { $0.grantedAt },
        .time("finished_at") { $0.finishedAt },
        .time("refunded_at") { $0.refundedAt },
    ]
}

extension PostgresQuery.StringInterpolation {
    /// The `orders` row's values for `order` (all NULL for nil), each cast to its column's type.
    mutating func appendInterpolation(orderRow order: Order?) {
        for (index, column) in OrderRows.columns.enumerated() {
            if index > 0 { appendLiteral(", ") }
            column.value(&self, order)
            appendLiteral(column.cast)
        }
    }

    /// The `orders` rows of `orders` as one row per order: `FROM unnest(…) AS o(columns)`, selecting each column.
    mutating func appendInterpolation(orderRows orders: [Order]) {
        appendLiteral("SELECT " + OrderRows.columns.map(\.fromElement).joined(separator: ", ") + " FROM unnest(")
        for (index, column) in OrderRows.columns.enumerated() {
            if index > 0 { appendLiteral(", ") }
            column.values(&self, orders)
        }
        appendLiteral(") AS o(\(OrderRows.orderColumns))")
    }
}
