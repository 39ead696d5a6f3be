import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// Rebuilds the inline projections (`orders`, `order_transactions`) from the event log, while the service keeps
/// running:
/// 1. fresh tables `orders_rebuild` and `order_transactions_rebuild` are created like the live ones (columns and
///    constraints) and filled from the log with the live path's fold — ranges of order ids folded at once, a page
///    of each per step, each step written while the next is folded — then given the live tables' indexes and keys;
/// 2. catch-up, in one transaction: `streams`, `orders` and `order_transactions` are locked in EXCLUSIVE mode, which
///    stops writers (an append waits at its stream upsert, before it reads or writes a projection) but not readers
///    (plain SELECTs go on reading the old tables); the orders appended to since their fold are folded again;
/// 3. swap, in the same transaction: the old tables are dropped and the new ones renamed into place, with the
///    service role's grants. DROP takes ACCESS EXCLUSIVE, so readers wait from there to the commit — only for the
///    swap itself, not the catch-up. Nobody ever sees a half-built projection.
///
/// Measured (scripts/bench/rebuild-read-block, debug build, a shared and busy 2-core machine; BENCHMARKS.md): over
/// 1,000,000 events, catch-up and swap took 0.14 s, and a reader looping `SELECT … FROM orders WHERE order_id = …`
/// waited at most 47 ms for one read in that window — less than CPU contention alone cost it during the fold, when
/// nothing is locked (135 ms). With ACCESS EXCLUSIVE from the start of the catch-up, as before, one read waited 242 ms.
///
/// Locking `streams` first is what keeps the upgrade to ACCESS EXCLUSIVE free of deadlocks: a writer that had
/// already read `orders` (ACCESS SHARE) and then waited to write it would wait on us while we waited on it. A reader
/// inside a long transaction that has read `orders` delays the swap, and everyone queues behind the swap meanwhile.
/// Index names of the swapped-in tables are the ones PostgreSQL generated for the copies; migrations therefore
/// must not refer to projection indexes by name.
public struct ProjectionRebuild: Sendable {
    public struct Progress: Sendable {
        public enum Phase: Sendable, Equatable {
            /// Folding the log into the new tables; the live ones are untouched.
            case folding
            /// Writers are stopped (readers are not) while `orders` orders that moved on since their fold are
            /// folded again; the swap follows.
            case catchingUp(orders: Int)
        }

        public var phase: Phase
        public var events: Int
        public var totalEvents: Int
        public var elapsed: Duration
    }

    public struct Result: Sendable {
        public var events: Int
        public var orders: Int
        /// Subscriptions folded (`SubscriptionRebuild`, after the orders' swap).
        public var subscriptions = 0
        /// Orders folded again at the swap because events arrived while the rebuild ran.
        public var caughtUp: Int
        public var elapsed: Duration
    }

    let client: SessionPool
    let logger: Logger

    init(client: SessionPool, logger: Logger = Logger(label: "ledger.rebuild")) {
        self.client = client
        self.logger = logger
    }

    /// As many ranges of order ids folded at once as there are cores (at most 4): the fold (decoding and checking each
    /// event in Swift) and PostgreSQL's part (reading the pages, copying rows in) each take about half of the machine
    /// (stop 40: 49 % and 44 % on two cores), so the ranges keep both busy.
    public static let defaultParallelism = min(4, max(1, ProcessInfo.processInfo.activeProcessorCount))

    /// Events read per page of each range: memory holds about a page per range (the rebuild's peak RSS 52 MB at
    /// 10,000, 76–81 MB at 30,000, 111–119 MB at 50,000). Fewer, larger steps wait less for the slower range of a step
    /// and send fewer queries: over 2,856,646 events, three alternations each, 11.28–11.47 s at 30,000 against
    /// 11.76–12.13 s at 10,000 (stop 39; 50,000 was no faster).
    public static let defaultPageSize = 30_000

    /// `progress` is called after each step (a page of each range folded), and once more at the catch-up, with the
    /// writers stopped.
    func run(
        pageSize: Int = defaultPageSize, parallelism: Int = defaultParallelism, progress: (Progress) async throws -> Void = { _ in }
    ) async throws -> Result {
        let started = ContinuousClock.now
        let rows = OrderRows(logger: logger)
        let indexes = try await ProjectionIndexes.read(client: client, logger: logger)
        try await client.withConnection { connection in
            for statement in [
                "DROP TABLE IF EXISTS orders_rebuild, order_transactions_rebuild",
                // Indexes come after the fill: building each once is cheaper than keeping it up row by row.
                "CREATE TABLE orders_rebuild (LIKE orders INCLUDING ALL EXCLUDING INDEXES)",
                "CREATE TABLE order_transactions_rebuild (LIKE order_transactions INCLUDING ALL EXCLUDING INDEXES)",
            ] {
                try await connection.statement(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
        let folds = OrderFolds(client: client, logger: logger)
        let (total, boundaries) = try await folds.plan(parts: parallelism)
        var ranges = zip([""] + boundaries, boundaries.map(Optional.some) + [nil]).map { from, below in
            OrderFolds.Pages(folds: folds, pageSize: pageSize, from: from, below: below)
        }
        var events = 0
        var orders = 0
        // Each step's orders are written (on a connection of their own) while the next step is read and folded.
        var writing: Task<Void, any Error>?
        do {
            while !ranges.isEmpty {
                let steps = try await Self.nextPages(of: ranges)
                ranges = steps.map(\.rest)
                let folded = steps.flatMap(\.batch.states)
                try await writing?.value
                writing = Task {
                    try await client.withConnection { connection in
                        try await rows.insertAll(
                            folded, ordersTable: "orders_rebuild", transactionsTable: "order_transactions_rebuild",
                            on: connection)
                    }
                }
                events += steps.reduce(0) { $0 + $1.batch.events }
                orders += folded.count
                try await progress(Progress(
                    phase: .folding, events: events, totalEvents: max(total, events), elapsed: ContinuousClock.now - started))
            }
            try await writing?.value
        } catch {
            writing?.cancel()
            _ = await writing?.result
            throw error
        }
        try await indexes.create(on: client, sessions: parallelism)
        let caughtUp = try await swap(rows: rows) { stale in
            try await progress(Progress(
                phase: .catchingUp(orders: stale), events: events, totalEvents: max(total, events),
                elapsed: ContinuousClock.now - started))
        }
        return Result(events: events, orders: orders, caughtUp: caughtUp, elapsed: ContinuousClock.now - started)
    }

    /// The next page of every range, folded at once; ranges that had ended are left out.
    private static func nextPages(of ranges: [OrderFolds.Pages]) async throws -> [OrderFolds.Pages.Step] {
        try await withThrowingTaskGroup(of: (Int, OrderFolds.Pages.Step?).self) { group in
            for (index, pages) in ranges.enumerated() {
                group.addTask { (index, try await pages.next()) }
            }
            var steps = [OrderFolds.Pages.Step?](repeating: nil, count: ranges.count)
            for try await (index, step) in group { steps[index] = step }
            return steps.compactMap { $0 }
        }
    }

    /// Stops writers (not readers), folds again the orders whose stream moved on since their fold, and swaps.
    private func swap(rows: OrderRows, catchingUp: (Int) async throws -> Void) async throws -> Int {
        let folds = OrderFolds(client: client, logger: logger)
        return try await client.withTransaction(logger: logger) { connection in
            // `streams` first: appends take it first, so none is left holding a projection lock we will need.
            try await connection.statement(
                "LOCK TABLE streams, orders, order_transactions IN EXCLUSIVE MODE", logger: logger)
            var stale: [String] = []
            for try await orderId in try await connection.statement(
                """
                SELECT s.stream_id FROM streams s LEFT JOIN orders_rebuild r ON r.order_id = s.stream_id
                WHERE s.kind = 'order' AND r.version IS DISTINCT FROM s.version
                """, logger: logger
            ).decode(String.self) {
                stale.append(orderId)
            }
            try await catchingUp(stale.count)
            if !stale.isEmpty {
                // Read through this transaction's connection: writers are blocked on our lock, so this is final.
                try await connection.statement(
                    "DELETE FROM order_transactions_rebuild WHERE order_id = ANY(\(stale))", logger: logger)
                try await connection.statement(
                    "DELETE FROM orders_rebuild WHERE order_id = ANY(\(stale))", logger: logger)
                let refolded = try await folds.fold(stale, on: connection)
                try await rows.insertAll(
                    refolded, ordersTable: "orders_rebuild", transactionsTable: "order_transactions_rebuild", on: connection)
            }
            // From here to the commit readers wait too: DROP needs ACCESS EXCLUSIVE.
            for statement in [
                "DROP TABLE orders, order_transactions",
                "ALTER TABLE orders_rebuild RENAME TO orders",
                "ALTER TABLE order_transactions_rebuild RENAME TO order_transactions",
                // New tables start with no grants: give the service back what it may do, before anyone sees them.
                "SELECT ledger_grant_service_privileges()",
            ] {
                try await connection.statement(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            return stale.count
        }
    }
}
