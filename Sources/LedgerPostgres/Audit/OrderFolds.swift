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

    let client: SessionPool
    let logger: Logger
    /// What to do with an unreadable event: rethrow to stop, or note it and return to fold the order without it.
    var unreadable: @Sendable (UnreadableEvent) throws -> Void = { throw $0.error }

    static let columns = "order_id, version, type, data::text, recorded_at"

    /// Calls `body` with batches of folded orders, in order id order, and the number of events they folded.
    func forEachBatch(
        pageSize: Int = 10_000, _ body: (_ orders: [Order], _ events: Int) async throws -> Void
    ) async throws {
        var pages = Pages(folds: self, pageSize: pageSize)
        while let (batch, rest) = try await pages.next() {
            try await body(batch.orders, batch.events)
            pages = rest
        }
    }

    /// How many events the log holds, and order ids that cut it into `parts` ranges of about as many orders (fewer
    /// when there are few orders). Both come from `streams`, one row per order, whose version is the order's number
    /// of events (versions have no gaps): over 1,000,000 events this took 29 ms, and counting `events` plus
    /// `ntile` over the orders 165 ms, all before the first event is folded.
    func plan(parts: Int) async throws -> (events: Int, boundaries: [String]) {
        var orders = 0, events = 0
        for try await (count, sum) in try await client.query(
            "SELECT count(*), COALESCE(sum(version), 0)::int8 FROM streams", .reads, logger: logger
        ).decode((Int, Int).self) {
            (orders, events) = (count, sum)
        }
        let offsets = (1..<max(1, parts)).map { orders * $0 / parts }.filter { $0 > 0 && $0 < orders }
        guard !offsets.isEmpty else { return (events, []) }
        var boundaries: [String] = []
        for try await orderId in try await client.query(
            """
            SELECT (SELECT order_id FROM streams ORDER BY order_id OFFSET n LIMIT 1)
            FROM unnest(\(offsets)::int8[]) AS n ORDER BY n
            """, .reads, logger: logger
        ).decode(String?.self) {
            if let orderId, orderId != boundaries.last { boundaries.append(orderId) }
        }
        return (events, boundaries)
    }

    /// The folds of the orders in `[from, below)` (or to the end), a page at a time. A value: `next()` answers the
    /// page and the pages after it, so two ranges can be folded at once by two tasks.
    struct Pages: Sendable {
        /// A page's whole orders and the events folded for them, and the pages after it.
        typealias Step = (batch: (orders: [Order], events: Int), rest: Pages)

        let folds: OrderFolds
        let pageSize: Int
        var below: String?
        private var cursor: (orderId: String, version: Int)
        private var folding = Folding()
        private var finished = false

        init(folds: OrderFolds, pageSize: Int, from: String = "", below: String? = nil) {
            self.folds = folds
            self.pageSize = pageSize
            self.below = below
            // (from, 0) sorts before every event of order `from` (versions start at 1) and after every lower order.
            self.cursor = (from, 0)
        }

        /// The next batch of whole orders and the events folded for it, or nil after the last.
        func next() async throws -> Step? {
            guard !finished else { return nil }
            var rest = self
            let rows = try await folds.client.query(
                below.map { below in
                    """
                    SELECT \(unescaped: OrderFolds.columns) FROM events
                    WHERE (order_id, version) > (\(cursor.orderId), \(cursor.version)) AND order_id < \(below)
                    ORDER BY order_id, version LIMIT \(pageSize)
                    """
                } ?? """
                    SELECT \(unescaped: OrderFolds.columns) FROM events
                    WHERE (order_id, version) > (\(cursor.orderId), \(cursor.version))
                    ORDER BY order_id, version LIMIT \(pageSize)
                    """, .reads, logger: folds.logger)
            var orders: [Order] = []
            var count = 0
            for try await row in rows {
                rest.cursor = try rest.folding.add(row, unreadable: folds.unreadable, finished: &orders)
                count += 1
            }
            if count < pageSize {
                if let order = rest.folding.finish() { orders.append(order) }
                rest.finished = true
            }
            return ((orders, count), rest)
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
    fileprivate struct Folding: Sendable {
        var current: Order?

        /// Folds the event in `row` (`OrderFolds.columns`); appends the previous order to `finished` when the row
        /// starts the next one. Returns the row's order id and version.
        mutating func add(
            _ row: PostgresRow, unreadable: (UnreadableEvent) throws -> Void, finished: inout [Order]
        ) throws -> (orderId: String, version: Int) {
            // Cell by cell: PostgresRow's variadic `decode` is not specialised in this module and looked up the
            // tuple's generic metadata for every row (13 % of a rebuild's CPU); a cell's `decode` is inlinable.
            let columns = row.makeRandomAccess()
            let orderId = try columns[0].decode(String.self), version = try columns[1].decode(Int.self)
            let type = try columns[2].decode(String.self), data = try columns[3].decode(ByteBuffer.self)
            let recordedAt = try columns[4].decode(Date.self)
            // The order is moved in and out of `current` (`take()`), not copied: a copy retained and released every
            // field of it for every event.
            if current?.orderId != orderId, let order = current.take() { finished.append(order) }
            do {
                let event = try OrderEvent(storedType: type, dataText: Array(data.readableBytesView))
                current = OrderDecider.evolve(
                    current.take(), RecordedOrderEvent(orderId: orderId, version: version, event: event, recordedAt: recordedAt))
            } catch {
                try unreadable(UnreadableEvent(orderId: orderId, version: version, type: type, error: error))
            }
            return (orderId, version)
        }

        mutating func finish() -> Order? { current.take() }
    }
}
