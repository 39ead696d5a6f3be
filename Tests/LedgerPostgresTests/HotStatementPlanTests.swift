import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Logging
import PostgresNIO
import Testing

/// The service's sessions plan each prepared statement once (`plan_cache_mode = force_generic_plan`), with the
/// statistics of that moment. Planned while the ledger was small, the append's read scanned the whole `events` table
/// on every call until autovacuum analysed it again: appends fell from ~790/s to ~350/s after a burst. What must hold
/// is that no hot statement's cost grows with the tables, whatever the statistics say.
@Suite("Hot statements: plans that stay on the indexes as the tables grow unanalysed")
struct HotStatementPlanTests {
    static let logger = Logger(label: "test")

    @Test func everyPreparedStatementOfTheServiceUsesTheIndexesAfterABurstWithoutAnalyse() async throws {
        try await TestDatabase.withOwnerAndService(limits: .service, poolSize: 1) { owner, service in
            // The statistics stay those of a small ledger: autovacuum would analyse at a moment of its own choosing.
            for table in ["events", "streams", "orders", "order_transactions"] {
                try await owner.query("ALTER TABLE \(unescaped: table) SET (autovacuum_enabled = false)", logger: Self.logger)
            }
            let ledger = Ledger(client: service)
            let orders = try await recordHappyOrders(2, on: ledger)
            // What autovacuum does once a new table has 50 rows: every table is a page or two.
            try await owner.query("ANALYZE", logger: Self.logger)
            // The service's one connection plans each hot statement now, with those statistics.
            try await recordHappyOrders(1, prefix: "planned", on: ledger)
            _ = try await ledger.history(orders[0], after: 0, limit: 100)
            _ = try await ledger.history(orders[0], asOf: Date(), after: 0, limit: 100)
            _ = try await ledger.streamVersion(orders[0])
            _ = try await ledger.order(orders[0])
            _ = try await ledger.transaction("any")

            try await Self.burst(50_000, copying: orders[0], on: owner)

            let plans = try await service.withConnection { connection in try await Self.cachedPlans(on: connection) }
            #expect(Set(plans.keys).isSuperset(of: [
                AppendStatements<OrderProjection>.ReadShape.name, AppendStatements<OrderProjection>.WriteShape.name, AppendStatements<OrderProjection>.GroupWriteShape.name,
                EventStore.PageShape.name,
                EventStore.PageAsOfShape.name, EventStore.VersionsShape.name, Ledger.OrderShape.name,
                Ledger.TransactionShape.name,
            ]))
            for (name, plan) in plans {
                // The token epoch is one row for good (schema/009): scanning it is the lookup.
                let scans = plan.split(separator: "\n").filter { $0.contains("Seq Scan") && !$0.contains("api_token_epoch") }
                #expect(scans.isEmpty, "\(name) scans a table that grows:\n\(plan)")
                #expect(!plan.contains("JIT"), "\(name) is compiled on every call:\n\(plan)")
            }
            // And the ledger still works on the grown tables.
            try await recordHappyOrders(1, prefix: "after-burst", on: ledger)
        }
    }

    /// Each connection knows a prepared statement by its shape's name alone: two shapes under one name would run
    /// each other's text.
    @Test func everyStatementShapeHasANameOfItsOwn() {
        let shapes: [any StatementShape.Type] = [
            AppendStatements<OrderProjection>.ReadShape.self, AppendStatements<OrderProjection>.WriteShape.self, AppendStatements<OrderProjection>.QueuedWriteShape.self,
            AppendStatements<OrderProjection>.GroupWriteShape.self, EventStore.PageShape.self, EventStore.PageAsOfShape.self, EventStore.VersionsShape.self, Ledger.OrderShape.self,
            Ledger.TransactionShape.self,
        ]
        #expect(Set(shapes.map { $0.name }).count == shapes.count)
        #expect(shapes.allSatisfy { $0.name.hasPrefix("ledger.") })
    }

    /// `count` events, streams, orders and transaction bindings of other orders, copied from `orderId`'s rows,
    /// written straight into the tables (no ANALYZE).
    static func burst(_ count: Int, copying orderId: String, on owner: SessionPool) async throws {
        try await owner.query(
            """
            INSERT INTO events (kind, stream_id, version, event_id, type, data, metadata, recorded_at, canonical, hash)
            SELECT 'order', 'burst-' || g, 1, gen_random_uuid(), 'order.created', '{}', '{}', now(), '\\x00', '\\x00'
            FROM generate_series(1, \(count)) g
            """, logger: logger)
        try await owner.query(
            "INSERT INTO streams (kind, stream_id, version) SELECT 'order', 'burst-' || g, 1 FROM generate_series(1, \(count)) g", logger: logger)
        try await owner.query(
            """
            INSERT INTO orders
            SELECT (jsonb_populate_record(o, jsonb_build_object('order_id', 'burst-' || g))).*
            FROM orders o CROSS JOIN generate_series(1, \(count)) g WHERE o.order_id = \(orderId)
            """, logger: logger)
        try await owner.query(
            """
            INSERT INTO order_transactions
            SELECT (jsonb_populate_record(t, jsonb_build_object('transaction_id', 'burst-' || g, 'order_id', 'burst-' || g))).*
            FROM order_transactions t CROSS JOIN generate_series(1, \(count)) g WHERE t.order_id = \(orderId)
            """, logger: logger)
    }

    /// Each `ledger.*` statement this session has prepared, with the plan it would run now (EXPLAIN of the cached
    /// generic plan: nothing is executed, so the writes are safe to ask about).
    static func cachedPlans(on connection: PostgresConnection) async throws -> [String: String] {
        var statements: [(String, [String])] = []
        for try await (name, types) in try await connection.query(
            "SELECT name, parameter_types::text[] FROM pg_prepared_statements WHERE name LIKE 'ledger.%'", logger: logger
        ).decode((String, [String]).self) { statements.append((name, types)) }
        var plans: [String: String] = [:]
        for (name, types) in statements {
            let arguments = types.map { "NULL::\($0)" }.joined(separator: ", ")
            var lines: [String] = []
            for try await line in try await connection.query(
                "EXPLAIN EXECUTE \"\(unescaped: name)\"(\(unescaped: arguments))", logger: logger
            ).decode(String.self) { lines.append(line) }
            plans[name] = lines.joined(separator: "\n")
        }
        return plans
    }
}
