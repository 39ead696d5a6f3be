import Foundation
import LedgerCore
import PostgresNIO

extension Ledger {
    /// The order as projected now; nil when the ledger has never seen it.
    public func order(_ orderId: String) async throws -> Order? {
        try await orderAndRecovery(orderId, attempts: 0)?.order
    }

    /// The order as projected now and where it stands on the recovery schedule (nil: never on it), with its latest
    /// `attempts`, newest first: what `GET /v1/orders/{id}` answers. One prepared statement reads the order, its
    /// schedule row and the token epoch (which confirms a request's cached token); a second reads the attempts of an
    /// order on the schedule. Nil when the ledger has never seen the order.
    public func orderAndRecovery(
        _ orderId: String, attempts: Int = 20
    ) async throws -> (order: Order, recovery: RecoveryEntry?)? {
        let confirmsTokens = self.confirmsTokens, logger = self.logger
        return try await client.withConnection(within: Deadline.remaining, .reads) { connection in
            var found: (order: Order, recovery: RecoveryEntry?, tokenEpoch: Int64)?
            let rows = try await connection.statement(
                Self.orderQuery(orderId), preparedAs: OrderShape.self, logger: logger)
            for try await row in rows {
                let columns = row.makeRandomAccess(), count = OrderRows.columns.count
                guard let order = try OrderRows.decodeOrder(columns, from: 0) else {
                    throw CorruptRow(column: "order_id", value: "NULL")
                }
                found = (order, try RecoverySchedule.entry(of: orderId, from: columns, at: count + 1),
                         try columns[count].decode(Int64.self))
            }
            guard var found else { return nil }
            if confirmsTokens { try await TokenConfirmation.confirm(epoch: found.tokenEpoch) }
            if attempts > 0, found.recovery != nil {
                found.recovery?.attempts = try await RecoverySchedule.attempts(
                    of: orderId, limit: attempts, on: connection, logger: logger)
            }
            return (found.order, found.recovery)
        }
    }

    static func orderQuery(_ orderId: String) -> PostgresQuery {
        """
        SELECT \(unescaped: OrderRows.orderColumnsOfO), (SELECT epoch FROM api_token_epoch),
               \(unescaped: RecoverySchedule.entryColumnsOfR)
        FROM orders o LEFT JOIN recovery_schedule r USING (order_id) WHERE o.order_id = \(orderId)
        """
    }

    enum OrderShape: StatementShape {
        static let name = "ledger.order"
        static let sql = orderQuery("").sql
    }

    /// "What happened to this order": every event with the state it left, and the order they fold to —
    /// only what had been recorded by `asOf` when given. Nil when the order has never existed.
    /// The whole story in memory, for in-process callers that know it is short (tests); the API and the CLI read
    /// it page by page (`history(_:asOf:after:limit:)`), so no request builds an answer of unbounded size.
    public func history(_ orderId: String, asOf: Date? = nil) async throws -> OrderHistory? {
        let fold = try await history(orderId, upTo: asOf.map(StreamLimit.recordedAt))
        if fold.entries.isEmpty {
            // Known now but not yet as of then: an empty story. Never known: none at all.
            guard asOf != nil, try await self.order(orderId) != nil else { return nil }
        }
        return OrderHistory(orderId: orderId, asOf: asOf, entries: fold.entries, order: fold.order)
    }

    /// "Was this transaction already credited?"; nil when the ledger has never seen the transactionId. One prepared
    /// statement, which also reads the token epoch: a backend asks before every credit, and a cached token is confirmed
    /// without a lookup of its own.
    public func transaction(_ transactionId: String) async throws -> TransactionStatus? {
        let confirmsTokens = self.confirmsTokens, logger = self.logger
        return try await client.withConnection(within: Deadline.remaining, .reads) { connection in
            var found: (status: TransactionStatus, tokenEpoch: Int64)?
            let rows = try await connection.statement(
                Self.transactionQuery(transactionId), preparedAs: TransactionShape.self, logger: logger)
            for try await (transactionId, orderId, accountId, state, grantedAt, finishedAt, refundedAt, epoch)
                in rows.decode((String, String, String, String, Date?, Date?, Date?, Int64).self) {
                guard let state = OrderState(rawValue: state) else { throw CorruptRow(column: "state", value: state) }
                found = (TransactionStatus(
                    transactionId: transactionId, orderId: orderId, accountId: accountId, state: state,
                    grantedAt: grantedAt, finishedAt: finishedAt, refundedAt: refundedAt), epoch)
            }
            guard let found else { return nil }
            if confirmsTokens { try await TokenConfirmation.confirm(epoch: found.tokenEpoch) }
            return found.status
        }
    }

    static func transactionQuery(_ transactionId: String) -> PostgresQuery {
        """
        SELECT t.transaction_id, t.order_id, t.account_id, o.state, t.granted_at, t.finished_at, t.refunded_at,
               (SELECT epoch FROM api_token_epoch)
        FROM order_transactions t JOIN orders o USING (order_id)
        WHERE t.transaction_id = \(transactionId)
        """
    }

    enum TransactionShape: StatementShape {
        static let name = "ledger.transaction"
        static let sql = transactionQuery("").sql
    }

    /// Orders by id, optionally of one account and/or in one state. Keyset pagination: the cursor is the last
    /// order id of the previous page, so pages stay stable while orders are added.
    public func orders(accountId: String?, state: OrderState?, limit: Int, after cursor: String?) async throws -> OrderPage {
        var orders = try await client.query(
            """
            SELECT \(unescaped: OrderRows.orderColumns) FROM orders
            WHERE (\(accountId)::text IS NULL OR account_id = \(accountId))
              AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
              AND order_id > \(cursor ?? "")
            ORDER BY order_id
            LIMIT \(limit + 1)
            """, .reads, logger: store.logger
        ) { rows in
            var orders: [Order] = []
            for try await row in rows { orders.append(try OrderRows.decodeOrder(row)) }
            return orders
        }
        let hasMore = orders.count > limit
        if hasMore { orders.removeLast() }
        return OrderPage(orders: orders, nextCursor: hasMore ? orders.last?.orderId : nil)
    }
}
