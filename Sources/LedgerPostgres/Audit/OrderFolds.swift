import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// Every order folded from the event log with the same pure fold the live path uses (`OrderDecider.evolve`),
/// one order at a time: the log is read in (order id, version) pages, so memory holds one page and one order. Only
/// the columns the fold needs are read (no metadata, ids or positions): rebuild and verify read the whole log.
struct OrderFolds: Sendable {
    /// A stored event the domain cannot read (only a tampered row can be one).
    struct UnreadableEvent: Sendable {
        let orderId: String
        let version: Int
        let type: String
        let error: any Error
    }

    let client: PostgresClient
    let logger: Logger
    /// What to do with an unreadable event: rethrow to stop, or note it and return to fold the order without it.
    var unreadable: @Sendable (UnreadableEvent) throws -> Void = { throw $0.error }

    static let columns = "order_id, version, type, data::text, recorded_at"

    /// Calls `body` with batches of folded orders, in order id order, and the number of events they folded.
    func forEachBatch(
        pageSize: Int = 10_000, _ body: (_ orders: [Order], _ events: Int) async throws -> Void
    ) async throws {
        var cursor: (orderId: String, version: Int) = ("", 0)
        var folding = Folding()
        while true {
            let rows = try await client.query(
                """
                SELECT \(unescaped: Self.columns) FROM events
                WHERE (order_id, version) > (\(cursor.orderId), \(cursor.version))
                ORDER BY order_id, version LIMIT \(pageSize)
                """, logger: logger)
            var finished: [Order] = []
            var count = 0
            for try await row in rows {
                let (orderId, version) = try folding.add(row, unreadable: unreadable, finished: &finished)
                count += 1
                cursor = (orderId, version)
            }
            let isLastPage = count < pageSize
            if isLastPage, let order = folding.finish() { finished.append(order) }
            try await body(finished, count)
            if isLastPage { return }
        }
    }

    /// The folds of just these orders (for the catch-up at the end of a rebuild), read through `connection`.
    func fold(_ orderIds: [String], on connection: PostgresConnection) async throws -> [Order] {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: Self.columns) FROM events
            WHERE order_id = ANY(\(orderIds)) ORDER BY order_id, version
            """, logger: logger)
        var orders: [Order] = []
        var folding = Folding()
        for try await row in rows { _ = try folding.add(row, unreadable: unreadable, finished: &orders) }
        if let order = folding.finish() { orders.append(order) }
        return orders
    }

    /// Folds events that arrive grouped by order, in version order; hands back each order once its last event is in.
    private struct Folding {
        var current: Order?

        /// Folds the event in `row` (`OrderFolds.columns`); appends the previous order to `finished` when the row
        /// starts the next one. Returns the row's order id and version.
        mutating func add(
            _ row: PostgresRow, unreadable: (UnreadableEvent) throws -> Void, finished: inout [Order]
        ) throws -> (String, Int) {
            let (orderId, version, type, data, recordedAt) = try row.decode((String, Int, String, ByteBuffer, Date).self)
            if let order = current, order.orderId != orderId {
                finished.append(order)
                current = nil
            }
            do {
                let event = try OrderEvent(type: type, data: JSONValue(parsing: data.readableBytesView))
                current = OrderDecider.evolve(
                    current, RecordedOrderEvent(orderId: orderId, version: version, event: event, recordedAt: recordedAt))
            } catch {
                try unreadable(UnreadableEvent(orderId: orderId, version: version, type: type, error: error))
            }
            return (orderId, version)
        }

        mutating func finish() -> Order? {
            defer { current = nil }
            return current
        }
    }
}
