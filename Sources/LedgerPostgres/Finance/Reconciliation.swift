import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// One row of a reconciliation: a transaction of the file, a grant of the ledger absent from it, or a bad line.
public struct ReconciliationRow: Sendable, Hashable {
    public var result: ReconciliationResult
    /// The line of the file where the row's record starts (1 is the header; a quoted line break makes a record span
    /// lines); nil for a ledger grant absent from the file.
    public var line: Int?
    public var transactionId: String?
    public var ledger: ReconciliationResult.LedgerSide?
    public var provider: ProviderTransaction?
    /// A line that is not a transaction: the field that could not be read, why, and the values that could.
    public var malformed: MalformedRecord?

    /// Why a malformed line could not be read.
    public var problem: String? { malformed?.description }
    /// What the provider's line says: the whole transaction, or as much of a malformed line as could be read.
    public var providerValues: ProviderRecordValues? { provider?.values ?? malformed?.values }
}

/// Per result: how many rows, and their amounts per currency (the provider's amount where the file has one).
public struct ReconciliationSummary: Sendable, Hashable {
    public var counts: [ReconciliationResult: Int] = [:]
    public var amounts: [ReconciliationResult: [String: Int64]] = [:]

    /// Counts the row; amounts come from the provider's file, so their sum is checked rather than trapping.
    mutating func add(_ row: ReconciliationRow) throws(FinanceError) {
        counts[row.result, default: 0] += 1
        if let money = row.provider?.amount ?? row.ledger?.amount {
            let (sum, overflow) = amounts[row.result, default: [:]][money.currency, default: 0].addingReportingOverflow(money.value)
            guard !overflow else { throw .amountOutOfRange(currency: money.currency) }
            amounts[row.result, default: [:]][money.currency] = sum
        }
    }

    /// True when every row matched: what a cron job checks.
    public var allMatched: Bool { counts.keys.allSatisfy { $0 == .matched } }
}

/// Reconciles a provider's transaction list against the ledger, streaming: the file is loaded in batches into a
/// temporary table of the connection, the comparison is one query whose rows stream back, so memory stays flat
/// however long the file is. A transaction listed twice (paid, then refunded) counts as its refunded line.
struct Reconciliation: Sendable {
    let client: SessionPool
    let logger: Logger
    static let batchSize = 5000

    init(client: SessionPool, logger: Logger = Logger(label: "ledger.finance")) {
        self.client = client
        self.logger = logger
    }

    /// The period's own rule, for callers that must refuse a bad period before they start answering.
    static func checkPeriod(from: PeriodBound, to: PeriodBound) throws(FinanceError) {
        guard !PeriodBound.isEmpty(from: from, to: to) else { throw .emptyPeriod }
    }

    /// Reads `chunks` (the CSV's bytes, see `ProviderFileReader`), compares, and calls `emit` for every row in file
    /// order, then the ledger's grants in the period (`from`…`to`, dates in UTC, both ends included) of `provider` that the
    /// file lacks. A file that cannot be read (no header, an over-long record, an unclosed quote) throws
    /// `ProviderFileError` before the first row is emitted: the whole file is loaded before the comparison starts.
    func run<Chunks: AsyncSequence & Sendable>(
        provider: Provider, from: PeriodBound, to: PeriodBound, chunks: Chunks,
        emit: (ReconciliationRow) async throws -> Void
    ) async throws -> ReconciliationSummary where Chunks.Element == [UInt8] {
        try Self.checkPeriod(from: from, to: to)
        return try await client.withConnection { connection in
            // No statement limit for this session while it reconciles: the comparison streams every row of a file of
            // any size (serve's sessions otherwise end a statement at 10 s; see ServerLimits). RESET restores it.
            try await connection.statement("SET statement_timeout = 0", logger: logger)
            try await connection.statement("DROP TABLE IF EXISTS pg_temp.provider_lines", logger: logger)
            try await connection.statement(
                """
                CREATE TEMP TABLE provider_lines (line int PRIMARY KEY, transaction_id text, product_id text,
                    amount_minor bigint, currency text, status text, occurred_at timestamptz, problem text,
                    problem_field text)
                """, logger: logger)
            do {
                try await load(chunks, on: connection)
                let summary = try await compare(provider: provider, from: from, to: to, on: connection, emit: emit)
                try await connection.statement("DROP TABLE pg_temp.provider_lines", logger: logger)
                try await connection.statement("RESET statement_timeout", logger: logger)
                return summary
            } catch {
                _ = try? await connection.statement("DROP TABLE IF EXISTS pg_temp.provider_lines", logger: logger)
                _ = try? await connection.statement("RESET statement_timeout", logger: logger)
                throw error
            }
        }
    }

    private func load<Chunks: AsyncSequence>(_ chunks: Chunks, on connection: PostgresConnection) async throws
    where Chunks.Element == [UInt8] {
        var reader = ProviderFileReader()
        var batch: [ProviderLine] = []
        for try await chunk in chunks {
            batch += try reader.feed(chunk)
            if batch.count >= Self.batchSize {
                try await insert(batch, on: connection)
                batch.removeAll(keepingCapacity: true)
            }
        }
        batch += try reader.finish()
        try await insert(batch, on: connection)
        try await connection.statement("CREATE INDEX ON provider_lines (transaction_id)", logger: logger)
        try await connection.statement("ANALYZE provider_lines", logger: logger)
    }

    /// Inserts a batch of lines: every value each line's record gave, with why it is not a transaction if it is not.
    private func insert(_ batch: [ProviderLine], on connection: PostgresConnection) async throws {
        guard !batch.isEmpty else { return }
        let read = batch.map { line -> (values: ProviderRecordValues, malformed: MalformedRecord?) in
            switch line.transaction {
            case .success(let transaction): (transaction.values, nil)
            case .failure(.malformed(let record)): (record.values, record)
            case .failure(let error): (ProviderRecordValues(), MalformedRecord(field: "record", reason: error.description, values: .init()))
            }
        }
        let text = { (value: (ProviderRecordValues) -> String?) in read.map { value($0.values) ?? "" } }
        try await connection.statement(
            """
            INSERT INTO provider_lines
            SELECT n.line, NULLIF(n.transaction_id, ''), NULLIF(n.product_id, ''), NULLIF(n.amount, '')::bigint,
                   NULLIF(n.currency, ''), NULLIF(n.status, ''), NULLIF(n.occurred_at, '')::timestamptz,
                   NULLIF(n.problem, ''), NULLIF(n.problem_field, '')
            FROM unnest(\(batch.map(\.line))::int[], \(text(\.transactionId))::text[], \(text(\.productId))::text[],
                        \(text { $0.amount.map(String.init) })::text[], \(text(\.currency))::text[],
                        \(text { $0.status?.rawValue })::text[], \(text { $0.occurredAt.map(RFC3339.format) })::text[],
                        \(read.map { $0.malformed?.reason ?? "" })::text[], \(read.map { $0.malformed?.field ?? "" })::text[])
                 AS n(line, transaction_id, product_id, amount, currency, status, occurred_at, problem, problem_field)
            """, logger: logger)
    }

    /// Runs on the caller's executor (nonsending), so `emit` — which may hold the caller's state, such as an HTTP
    /// body writer — never crosses to another one.
    nonisolated(nonsending) private func compare(
        provider: Provider, from: PeriodBound, to: PeriodBound, on connection: PostgresConnection,
        emit: (ReconciliationRow) async throws -> Void
    ) async throws -> ReconciliationSummary {
        let rows = try await connection.statement(
            """
            WITH listed AS (
                SELECT DISTINCT ON (transaction_id) * FROM provider_lines WHERE problem IS NULL
                ORDER BY transaction_id, (status = 'refunded') DESC, line
            ), period AS (
                \(period: from, to, timeZone: "UTC")
            )
            SELECT p.line, p.transaction_id, o.order_id, o.state, o.product_id, o.amount_value, o.currency,
                   p.product_id, p.amount_minor, p.currency, p.status, p.occurred_at, NULL::text, NULL::text
            FROM listed p LEFT JOIN orders o ON o.transaction_id = p.transaction_id
            UNION ALL
            SELECT NULL, o.transaction_id, o.order_id, o.state, o.product_id, o.amount_value, o.currency,
                   NULL, NULL, NULL, NULL, NULL, NULL, NULL
            FROM orders o, period
            WHERE o.provider = \(provider.rawValue) AND o.transaction_id IS NOT NULL
              AND o.granted_at >= period.starts AND o.granted_at < period.ends
              AND NOT EXISTS (SELECT 1 FROM provider_lines p WHERE p.transaction_id = o.transaction_id AND p.problem IS NULL)
            UNION ALL
            -- A malformed line, with the values it gave; the ledger's grant of its transaction (if any) is listed above
            -- as missing at the provider, since the line could not say what the provider did.
            SELECT line, transaction_id, NULL, NULL, NULL, NULL, NULL, product_id, amount_minor, currency, status,
                   occurred_at, problem, problem_field
            FROM provider_lines WHERE problem IS NOT NULL
            ORDER BY 1 NULLS LAST, 2
            """, logger: logger)
        var summary = ReconciliationSummary()
        for try await row in rows {
            let (line, transactionId, orderId, state, ledgerProduct, ledgerAmount, ledgerCurrency) =
                try row.decode((Int?, String?, String?, String?, String?, Int64?, String?).self)
            let columns = row.makeRandomAccess()
            let problem = try columns[12].decode(String?.self)
            if let problem {
                let values = ProviderRecordValues(
                    transactionId: transactionId, productId: try columns[7].decode(String?.self),
                    amount: try columns[8].decode(Int64?.self), currency: try columns[9].decode(String?.self),
                    status: try columns[10].decode(String?.self).flatMap(ProviderStatus.init),
                    occurredAt: try columns[11].decode(Date?.self))
                let malformed = MalformedRecord(
                    field: try columns[13].decode(String?.self) ?? "record", reason: problem, values: values)
                let reconciled = ReconciliationRow(
                    result: .malformed, line: line, transactionId: transactionId, ledger: nil, provider: nil, malformed: malformed)
                try summary.add(reconciled)
                try await emit(reconciled)
                continue
            }
            var ledger: ReconciliationResult.LedgerSide?
            if let orderId, let state, let ledgerProduct, let ledgerAmount, let ledgerCurrency {
                guard let state = OrderState(rawValue: state) else { throw CorruptRow(column: "state", value: state) }
                ledger = .init(orderId: orderId, state: state, productId: ledgerProduct,
                               amount: Money(value: ledgerAmount, currency: ledgerCurrency))
            }
            var listed: ProviderTransaction?
            if let transactionId, let product = try columns[7].decode(String?.self) {
                listed = ProviderTransaction(
                    transactionId: transactionId, productId: product,
                    amount: Money(value: try columns[8].decode(Int64.self), currency: try columns[9].decode(String.self)),
                    status: ProviderStatus(rawValue: try columns[10].decode(String.self)) ?? .paid,
                    occurredAt: try columns[11].decode(Date.self))
            }
            let reconciled = ReconciliationRow(
                result: ReconciliationResult.classify(ledger: ledger, provider: listed), line: line,
                transactionId: transactionId, ledger: ledger, provider: listed, malformed: nil)
            try summary.add(reconciled)
            try await emit(reconciled)
        }
        return summary
    }
}
