import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// Every order folded from the event log with the same pure fold the live path uses (`OrderDecider.evolve`),
/// one order at a time: the log is read in (order id, version) pages, so memory holds one page and one order.
struct OrderFolds: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// What to do with a stored event the domain cannot read (only a tampered row can be one): rethrow to stop, or
    /// note it and return to fold the order without it.
    var unreadable: @Sendable (StoredEvent, any Error) throws -> Void = { _, error in throw error }

    /// Calls `body` with batches of folded orders, in order id order, and the number of events they folded.
    func forEachBatch(
        pageSize: Int = 10_000, _ body: (_ orders: [Order], _ events: Int) async throws -> Void
    ) async throws {
        var cursor: (orderId: String, version: Int) = ("", 0)
        var folding = Folding()
        while true {
            let rows = try await client.query(
                """
                SELECT \(unescaped: EventStore.columns) FROM events
                WHERE (order_id, version) > (\(cursor.orderId), \(cursor.version))
                ORDER BY order_id, version LIMIT \(pageSize)
                """, logger: logger)
            var finished: [Order] = []
            var count = 0
            for try await row in rows {
                let stored = try EventStore.decode(row)
                count += 1
                if let order = try folding.add(stored, unreadable: unreadable) { finished.append(order) }
                cursor = (stored.orderId, stored.version)
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
            SELECT \(unescaped: EventStore.columns) FROM events
            WHERE order_id = ANY(\(orderIds)) ORDER BY order_id, version
            """, logger: logger)
        var orders: [Order] = []
        var folding = Folding()
        for try await row in rows {
            if let order = try folding.add(try EventStore.decode(row), unreadable: unreadable) { orders.append(order) }
        }
        if let order = folding.finish() { orders.append(order) }
        return orders
    }

    /// Folds events that arrive grouped by order, in version order; hands back each order once its last event is in.
    private struct Folding {
        var current: Order?

        /// Folds `stored` in; returns the previous order when `stored` starts the next one.
        mutating func add(_ stored: StoredEvent, unreadable: (StoredEvent, any Error) throws -> Void) throws -> Order? {
            var done: Order?
            if let order = current, order.orderId != stored.orderId {
                done = order
                current = nil
            }
            do {
                current = OrderDecider.evolve(current, try stored.recordedOrderEvent())
            } catch {
                try unreadable(stored, error)
            }
            return done
        }

        mutating func finish() -> Order? {
            defer { current = nil }
            return current
        }
    }
}
