import Foundation
import LedgerCore
import PostgresNIO

/// The `orders` row, column by column, in one list: its name and SQL type, how an order fills it in the append's write
/// statement, how many orders fill it in the grouped append's (an array), and how the rebuild's bulk fill writes it
/// (`COPY` text). Every statement that names the columns or binds their values is built from this list;
/// `OrderRows.decodeOrder` reads them back in this order.
struct OrderRowColumn: Sendable {
    typealias Interpolation = PostgresQuery.StringInterpolation

    let name: String
    let type: String
    /// Binds one order's value (NULL for no order).
    let value: @Sendable (inout Interpolation, Order?) -> Void
    /// Binds the values of many orders as one array (cast with `arrayCast`).
    let values: @Sendable (inout Interpolation, [Order]) -> Void
    /// Writes one order's value as a field of a `COPY` row.
    let copy: @Sendable (inout CopyTextRows, Order) -> Void
    /// `::type`, made once: the append's write statement is built on every append.
    let cast: String
    /// `::` the array type `values` binds: `type[]`, or `text[]` for an array column (each element its literal).
    let arrayCast: String

    init(
        name: String, type: String, value: @escaping @Sendable (inout Interpolation, Order?) -> Void,
        values: @escaping @Sendable (inout Interpolation, [Order]) -> Void,
        copy: @escaping @Sendable (inout CopyTextRows, Order) -> Void
    ) {
        self.name = name
        self.type = type
        self.value = value
        self.values = values
        self.copy = copy
        self.cast = "::" + type
        self.arrayCast = type.hasSuffix("[]") ? "::text[]" : "::" + type + "[]"
    }

    /// A text column.
    static func text(_ name: String, _ read: @escaping @Sendable (Order) -> String?) -> OrderRowColumn {
        OrderRowColumn(
            name: name, type: "text",
            value: { query, order in query.appendInterpolation(order.flatMap(read)) },
            values: { query, orders in query.appendInterpolation(NullableArray(orders.map(read))) },
            copy: { rows, order in rows.append(read(order)) })
    }

    /// An integer column (`int8` in the bind, whatever the column's own width).
    static func integer(_ name: String, _ read: @escaping @Sendable (Order) -> Int64?) -> OrderRowColumn {
        OrderRowColumn(
            name: name, type: "int8",
            value: { query, order in query.appendInterpolation(order.flatMap(read)) },
            values: { query, orders in query.appendInterpolation(NullableArray(orders.map(read))) },
            copy: { rows, order in rows.append(read(order)) })
    }

    /// A time column.
    static func time(_ name: String, _ read: @escaping @Sendable (Order) -> Date?) -> OrderRowColumn {
        OrderRowColumn(
            name: name, type: "timestamptz",
            value: { query, order in query.appendInterpolation(order.flatMap(read).timestamp) },
            values: { query, orders in query.appendInterpolation(NullableArray(orders.map { read($0).timestamp })) },
            copy: { rows, order in rows.append(read(order)) })
    }
}

extension OrderRows {
    static let columns: [OrderRowColumn] = [
        .text("order_id") { $0.orderId },
        .text("account_id") { $0.accountId },
        .text("product_id") { $0.productId },
        .integer("quantity") { Int64($0.quantity) },
        .integer("amount_value") { $0.amount.value },
        .text("currency") { $0.amount.currency },
        .text("provider") { $0.provider.rawValue },
        .text("environment") { $0.environment.rawValue },
        OrderRowColumn(
            name: "app_account_token", type: "uuid",
            value: { query, order in query.appendInterpolation(order?.appAccountToken) },
            values: { query, orders in query.appendInterpolation(NullableArray(orders.map(\.appAccountToken))) },
            copy: { rows, order in rows.append(order.appAccountToken?.lowercasedText) }),
        .text("state") { $0.state.rawValue },
        .integer("version") { Int64($0.version) },
        .text("transaction_id") { $0.transactionId },
        OrderRowColumn(
            name: "flags", type: "text[]",
            value: { query, order in query.appendInterpolation(order?.flags.map(\.rawValue)) },
            values: { query, orders in query.appendInterpolation(orders.map { ArrayLiteral.text($0.flags.map(\.rawValue)) }) },
            copy: { rows, order in rows.append(array: order.flags.map(\.rawValue)) }),
        .integer("verification_attempts") { Int64($0.verificationAttempts) },
        .text("last_error_code") { $0.lastErrorCode },
        .integer("refunded_value") { $0.refundedAmount?.value },
        .text("refunded_currency") { $0.refundedAmount?.currency },
        .time("created_at") { $0.createdAt },
        .time("updated_at") { $0.updatedAt },
        .time("granted_at") { $0.grantedAt },
        .time("finished_at") { $0.finishedAt },
        .time("refunded_at") { $0.refundedAt },
    ]
}

extension PostgresQuery.StringInterpolation {
    /// The `orders` rows' values for `orders`, one array per column (`OrderRowColumn.arrayCast`).
    mutating func appendInterpolation(orderColumns orders: [Order]) {
        for (index, column) in OrderRows.columns.enumerated() {
            if index > 0 { appendLiteral(", ") }
            column.values(&self, orders)
            appendLiteral(column.arrayCast)
        }
    }

    /// The `orders` row's values for `order` (all NULL for nil), each cast to its column's type.
    mutating func appendInterpolation(orderRow order: Order?) {
        for (index, column) in OrderRows.columns.enumerated() {
            if index > 0 { appendLiteral(", ") }
            column.value(&self, order)
            appendLiteral(column.cast)
        }
    }
}
