import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// What a revenue report is grouped by. Currency is always part of the grouping: amounts in different currencies
/// are never added together.
public enum RevenueDimension: String, Sendable, CaseIterable {
    case day, product, currency, provider

    /// The SQL expression of the dimension over the report's `facts` (a fixed string, never user input).
    var column: String {
        switch self {
        case .day: "to_char(day, 'YYYY-MM-DD')"
        case .product: "product_id"
        case .currency: "currency"
        case .provider: "provider"
        }
    }
}

/// One row of a revenue report: its group's values, then grants, refunds and net, in minor units of `currency`.
public struct RevenueRow: Sendable, Hashable {
    public var group: [RevenueDimension: String]
    public var currency: String
    public var grantedCount: Int64
    public var grantedAmount: Int64
    public var refundedCount: Int64
    public var refundedAmount: Int64
    public var netAmount: Int64 { grantedAmount - refundedAmount }
}

public enum FinanceError: Error, Sendable, Hashable, CustomStringConvertible {
    case unknownTimeZone(String)
    case emptyPeriod
    /// Amounts in `currency` add up past what an Int64 of minor units holds: the report cannot give an exact sum.
    case amountOutOfRange(currency: String)

    public var description: String {
        switch self {
        case .unknownTimeZone(let name): "timezone \(name) is not an IANA time zone PostgreSQL knows (e.g. UTC, Asia/Shanghai)"
        case .emptyPeriod: "from must not be after to"
        case .amountOutOfRange(let currency):
            "amounts in \(currency) add up past \(Int64.max) minor units, more than a sum can hold exactly; "
                + "ask for a shorter period or finer groups"
        }
    }
}

/// Revenue per group from the `orders` projection (indexed by granted and refunded time), never by replaying
/// events. A grant counts on the day of its recorded time in `timeZone`, a refund on the day of its own, so a refund
/// in a later period than its grant lowers that later period.
struct RevenueReport: Sendable {
    let client: SessionPool
    let logger: Logger

    init(client: SessionPool, logger: Logger = Logger(label: "ledger.finance")) {
        self.client = client
        self.logger = logger
    }

    /// From `from` through `to`, both included (a date: the whole day in `timeZone`; a time: that instant), grouped
    /// by day in `timeZone` and the other dimensions.
    func rows(from: PeriodBound, to: PeriodBound, groupBy: [RevenueDimension], timeZone: String) async throws -> [RevenueRow] {
        guard !PeriodBound.isEmpty(from: from, to: to) else { throw FinanceError.emptyPeriod }
        try await checkTimeZone(timeZone)
        // Each dimension once, currency last: the callers refuse a repeated name, but a repeat reaching here must
        // not repeat a column (nor, as it once did, trap building the group).
        var dimensions: [RevenueDimension] = []
        for dimension in groupBy where dimension != .currency && !dimensions.contains(dimension) {
            dimensions.append(dimension)
        }
        dimensions.append(.currency)
        let columns = dimensions.map(\.column).joined(separator: ", ")
        return try await client.query(
            """
            WITH period AS (
                \(period: from, to, timeZone: timeZone)
            ), facts AS (
                SELECT (granted_at AT TIME ZONE \(timeZone))::date AS day, product_id, currency, provider,
                       1 AS granted, amount_value AS granted_amount, 0 AS refunded, 0::bigint AS refunded_amount
                FROM orders, period WHERE granted_at >= period.starts AND granted_at < period.ends
                UNION ALL
                SELECT (refunded_at AT TIME ZONE \(timeZone))::date, product_id, COALESCE(refunded_currency, currency),
                       provider, 0, 0, 1, COALESCE(refunded_value, amount_value)
                FROM orders, period WHERE refunded_at >= period.starts AND refunded_at < period.ends
            )
            SELECT ARRAY[\(unescaped: columns)]::text[], sum(granted)::bigint, sum(granted_amount)::text,
                   sum(refunded)::bigint, sum(refunded_amount)::text
            FROM facts GROUP BY \(unescaped: columns) ORDER BY \(unescaped: columns)
            """, .reads, logger: logger
        ) { [dimensions] rows in
            var report: [RevenueRow] = []
            for try await (values, granted, grantedSum, refunded, refundedSum)
                in rows.decode(([String], Int64, String, Int64, String).self) {
                guard values.count == dimensions.count, let currency = values.last else {
                    throw CorruptRow(column: "revenue group", value: values.joined(separator: ","))
                }
                var group: [RevenueDimension: String] = [:]
                for (dimension, value) in zip(dimensions, values) where groupBy.contains(dimension) {
                    group[dimension] = value
                }
                // Summed as numeric, so a sum past Int64 is an answer to refuse, not a database error or a trap.
                guard let grantedAmount = Int64(grantedSum), let refundedAmount = Int64(refundedSum) else {
                    throw FinanceError.amountOutOfRange(currency: currency)
                }
                report.append(RevenueRow(
                    group: group, currency: currency, grantedCount: granted,
                    grantedAmount: grantedAmount, refundedCount: refunded, refundedAmount: refundedAmount))
            }
            return report
        }
    }

    func checkTimeZone(_ name: String) async throws {
        let known = try await client.query(
            "SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = \(name))", .reads, logger: logger
        ) { rows in
            for try await known in rows.decode(Bool.self) { return known }
            return false
        }
        guard known else { throw FinanceError.unknownTimeZone(name) }
    }
}
