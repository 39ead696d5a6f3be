import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The kinds of order that finance must look at: paid but not credited, credited but not finished, and the rest.
public enum AnomalyKind: String, Sendable, CaseIterable {
    /// Receipt received, verification failed but retryable, or verified — and not granted after the threshold.
    case lostOrder = "lost_order"
    /// Granted but not finished: the provider keeps re-delivering the transaction.
    case notFinished = "not_finished"
    case finishedBeforeGrant = "finished_before_grant"
    case lateReceipt = "late_receipt"
    case refundedBeforeGrant = "refunded_before_grant"
    /// Payment queued, nothing after.
    case stuckPayment = "stuck_payment"
    /// A grant refused for `account_mismatch` or `already_granted` (from the refusal log).
    case refusedGrant = "refused_grant"

    /// How old a case must be before it is reported (`olderThan` overrides it).
    public var defaultThreshold: Duration {
        switch self {
        case .lostOrder: .seconds(600)
        case .notFinished: .seconds(3600)
        case .stuckPayment: .seconds(86_400)
        case .finishedBeforeGrant, .lateReceipt, .refundedBeforeGrant, .refusedGrant: .zero
        }
    }

    /// The query for this kind: order id, account, state, since, detail; `$1` is the threshold in seconds.
    fileprivate var sql: String {
        func select(_ since: String, _ detail: String, _ condition: String) -> String {
            "SELECT order_id, account_id, state, \(since), \(detail) FROM orders "
                + "WHERE \(condition) AND \(since) < now() - make_interval(secs => $1)"
        }
        switch self {
        case .lostOrder:
            return select("updated_at", "'paid but not credited: ' || state || ' since ' || updated_at",
                          "state IN ('receipt_received', 'verification_failed', 'verified')")
        case .notFinished:
            return select("granted_at", "'granted, never finished: the provider will keep re-delivering ' || coalesce(transaction_id, '')",
                          "state = 'granted'")
        case .stuckPayment:
            return select("updated_at", "'payment queued, nothing since'", "state = 'payment_queued'")
        case .finishedBeforeGrant, .lateReceipt, .refundedBeforeGrant:
            return select("updated_at", "'flagged ' || '\(rawValue)'", "'\(rawValue)' = ANY(flags)")
        case .refusedGrant:
            return """
                SELECT r.order_id, coalesce(o.account_id, ''), coalesce(o.state, 'unknown'), r.recorded_at,
                       r.code || ' by ' || r.actor || ' for transaction ' || coalesce(r.transaction_id, '') || ': ' || r.details::text
                FROM refusals r LEFT JOIN orders o USING (order_id)
                WHERE r.event_type = 'order.granted' AND r.code IN ('account_mismatch', 'already_granted')
                  AND r.recorded_at < now() - make_interval(secs => $1)
                """
        }
    }
}

/// One order finance should look at, and why.
public struct Anomaly: Sendable, Hashable {
    public var kind: AnomalyKind
    public var orderId: String
    public var accountId: String
    public var state: String
    public var since: Date
    public var detail: String
}

/// Finds anomalies in the projections and the refusal log; read-only.
public struct AnomalyFinder: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger = Logger(label: "ledger.finance")) {
        self.client = client
        self.logger = logger
    }

    /// Anomalies of `kinds` (all when empty), each older than `olderThan` or its kind's default threshold.
    public func find(kinds: [AnomalyKind] = [], olderThan: Duration? = nil) async throws -> [Anomaly] {
        var found: [Anomaly] = []
        for kind in kinds.isEmpty ? AnomalyKind.allCases : kinds {
            let threshold = Double((olderThan ?? kind.defaultThreshold).components.seconds)
            var query = PostgresQuery(unsafeSQL: kind.sql + " ORDER BY 4, 1")
            query.binds.append(threshold)
            found += try await client.query(query, logger: logger) { rows in
                var found: [Anomaly] = []
                for try await (orderId, accountId, state, since, detail) in rows.decode((String, String, String, Date, String).self) {
                    found.append(Anomaly(kind: kind, orderId: orderId, accountId: accountId, state: state, since: since, detail: detail))
                }
                return found
            }
        }
        return found
    }
}

/// `90s`, `10m`, `24h`, `2d`: how `olderThan` is written; at most 100 years, so `now() - threshold` stays a time
/// PostgreSQL can represent.
public enum ThresholdText {
    static let maximumSeconds: Int64 = 100 * 366 * 86_400

    public static func parse(_ text: String) -> Duration? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let number = Int64(text.dropLast()), number >= 0,
              number <= maximumSeconds / unit else { return nil }
        return .seconds(number * unit)
    }
}
