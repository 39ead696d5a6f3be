import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// One day of one product's subscriptions in one currency (`Finance.subscriptions`). Amounts in minor units.
public struct SubscriptionReportRow: Sendable, Hashable {
    /// The day, `YYYY-MM-DD` in the report's time zone.
    public var day: String
    public var productId: String
    public var currency: String
    /// Paid periods that began on or before the day and end after it: subscriptions active at the day's end.
    public var active: Int64
    /// Monthly recurring revenue at the day's end: each active period's price × periods per year ÷ 12, summed, then
    /// rounded half up to a minor unit.
    public var mrr: Int64
    /// First paid periods of their subscription, and renewals (every later one), that began that day, and what they
    /// paid.
    public var started: Int64
    public var renewed: Int64
    public var revenue: Int64
    /// Refunds made that day, and what they gave back (a prorated refund: its part only).
    public var refunds: Int64
    public var refunded: Int64
    /// Subscriptions whose last period ended that day with none after it (as the ledger knows now), by why, as the
    /// renewal info last signed says: the customer turned auto-renew off; billing failed; anything else.
    public var churnedVoluntary: Int64
    public var churnedBilling: Int64
    public var churnedOther: Int64
}

/// Subscription revenue per day, product and currency from `subscription_transactions` (schema/025) in one scan:
/// each paid production period adds to the active count and the MRR on the day it began and takes away on the day it
/// ended (its revocation, if earlier), and a running sum per product and currency gives each day's value. Each kind
/// of change is counted per day, product and currency before they are put together (hashed, not sorted: a year of
/// 1,000,000 renewals sorted two million rows on disk). A subscription's first period is the one bought first, its
/// last the one bought last. Family
/// shared periods entitle without being revenue, a price not in whole minor units is listed apart (never rounded),
/// and sandbox periods are tests: none of those is in the report.
struct SubscriptionReport: Sendable {
    let client: SessionPool
    let logger: Logger

    /// Each day from `from` through `to` (both included; days in `timeZone`) that has anything to say.
    func rows(from: PeriodBound, to: PeriodBound, timeZone: String) async throws -> [SubscriptionReportRow] {
        guard !PeriodBound.isEmpty(from: from, to: to) else { throw FinanceError.emptyPeriod }
        try await RevenueReport(client: client, logger: logger).checkTimeZone(timeZone)
        return try await client.query(
            """
            WITH period AS (
                \(period: from, to, timeZone: timeZone)
            ), bounds AS (
                SELECT (starts AT TIME ZONE \(timeZone))::date AS first_day,
                       ((ends - interval '1 microsecond') AT TIME ZONE \(timeZone))::date AS last_day, ends
                FROM period
            ), t AS (
                SELECT subscription_id, product_id, currency, price_value, periods_per_year, refunded_value,
                       purchased_at, revoked_at, (purchased_at AT TIME ZONE \(timeZone))::date AS began,
                       least(expires_at, revoked_at) AS ends_at,
                       (least(expires_at, revoked_at) AT TIME ZONE \(timeZone))::date AS ended
                FROM subscription_transactions, bounds
                WHERE environment = 'production' AND NOT family_shared AND price_value IS NOT NULL
                  AND purchased_at < bounds.ends
            ), firsts_and_lasts AS (
                SELECT subscription_id, min(purchased_at) AS first_at, max(purchased_at) AS last_at FROM t GROUP BY subscription_id
            ), flows (day, product_id, currency, active, yearly, started, renewed, revenue, refunds, refunded,
                      voluntary, billing, other) AS (
                SELECT t.began, t.product_id, t.currency, count(*), sum(t.price_value::numeric * t.periods_per_year),
                       count(*) FILTER (WHERE t.purchased_at = f.first_at), count(*) FILTER (WHERE t.purchased_at > f.first_at),
                       sum(t.price_value::numeric), 0, 0::numeric, 0, 0, 0
                FROM t JOIN firsts_and_lasts f USING (subscription_id) GROUP BY 1, 2, 3
                UNION ALL
                SELECT ended, product_id, currency, -count(*), -sum(price_value::numeric * periods_per_year), 0, 0, 0, 0, 0, 0, 0, 0
                FROM t GROUP BY 1, 2, 3
                UNION ALL
                SELECT (revoked_at AT TIME ZONE \(timeZone))::date, product_id, currency, 0, 0, 0, 0, 0, count(*),
                       sum(refunded_value::numeric), 0, 0, 0
                FROM t WHERE refunded_value IS NOT NULL GROUP BY 1, 2, 3
                UNION ALL
                SELECT t.ended, t.product_id, t.currency, 0, 0, 0, 0, 0, 0, 0, count(*) FILTER (WHERE why = 'voluntary'),
                       count(*) FILTER (WHERE why = 'billing_error'),
                       count(*) FILTER (WHERE why IS NULL OR why NOT IN ('voluntary', 'billing_error'))
                FROM t JOIN firsts_and_lasts f ON f.subscription_id = t.subscription_id AND f.last_at = t.purchased_at
                JOIN subscriptions s ON s.subscription_id = t.subscription_id
                CROSS JOIN LATERAL (SELECT s.facts->'renewalInfos'->-1->>'expirationIntent' AS why) w
                WHERE t.ends_at <= now() GROUP BY 1, 2, 3
                UNION ALL
                SELECT d::date, k.product_id, k.currency, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
                FROM bounds, generate_series(bounds.first_day, bounds.last_day, interval '1 day') d,
                     (SELECT DISTINCT product_id, currency FROM t) k
            ), days AS (
                SELECT day, product_id, currency, sum(active) AS active, sum(yearly) AS yearly, sum(started) AS started,
                       sum(renewed) AS renewed, sum(revenue) AS revenue, sum(refunds) AS refunds,
                       sum(refunded) AS refunded, sum(voluntary) AS voluntary, sum(billing) AS billing,
                       sum(other) AS other
                FROM flows, bounds WHERE day <= bounds.last_day GROUP BY day, product_id, currency
            ), running AS (
                SELECT *, sum(active) OVER w AS active_then, sum(yearly) OVER w AS yearly_then
                FROM days WINDOW w AS (PARTITION BY product_id, currency ORDER BY day)
            )
            SELECT to_char(day, 'YYYY-MM-DD'), product_id, currency, active_then::int8,
                   floor(yearly_then / 12 + 0.5)::text, started::int8, renewed::int8, revenue::text, refunds::int8,
                   refunded::text, voluntary::int8, billing::int8, other::int8
            FROM running, bounds
            WHERE day >= bounds.first_day
              AND (active_then <> 0 OR started <> 0 OR renewed <> 0 OR refunds <> 0 OR voluntary <> 0 OR billing <> 0
                   OR other <> 0)
            ORDER BY day, product_id, currency
            """, .reads, logger: logger
        ) { rows in
            var report: [SubscriptionReportRow] = []
            for try await row in rows {
                let columns = row.makeRandomAccess()
                let currency = try columns[2].decode(String.self)
                // Summed as numeric: a sum past Int64 is an answer to refuse, never a trap.
                guard let mrr = Int64(try columns[4].decode(String.self)),
                      let revenue = Int64(try columns[7].decode(String.self)),
                      let refunded = Int64(try columns[9].decode(String.self))
                else { throw FinanceError.amountOutOfRange(currency: currency) }
                report.append(SubscriptionReportRow(
                    day: try columns[0].decode(String.self), productId: try columns[1].decode(String.self),
                    currency: currency, active: try columns[3].decode(Int64.self), mrr: mrr,
                    started: try columns[5].decode(Int64.self), renewed: try columns[6].decode(Int64.self),
                    revenue: revenue, refunds: try columns[8].decode(Int64.self), refunded: refunded,
                    churnedVoluntary: try columns[10].decode(Int64.self), churnedBilling: try columns[11].decode(Int64.self),
                    churnedOther: try columns[12].decode(Int64.self)))
            }
            return report
        }
    }
}
