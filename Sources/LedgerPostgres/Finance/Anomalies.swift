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
    /// A provider confirmed the payment (its signed message is on the order) and the order is still not granted.
    case paidNotGranted = "paid_not_granted"
    /// A provider refunded an order that had been granted: the goods were credited and the money went back.
    case refundedAtProvider = "refunded_at_provider"
    /// A provider's payment names another amount (or currency) than the order's, or a price not in whole minor units
    /// (the event's `unconvertedPrice`), or its refund more than the order's amount (or another currency); none was
    /// applied.
    case amountMismatch = "amount_mismatch"
    /// A provider's verified message that matches no order: paid at the provider, no order here.
    case unknownProviderTransaction = "unknown_provider_transaction"
    /// Apple asks for consumption information about a refund request (answer within 12 hours).
    case consumptionRequest = "consumption_request"
    /// A provider's verified message naming a value the event rules refuse (a malformed transaction id, a currency
    /// not in ISO form, an amount past the bound): kept verbatim, not applied to any order.
    case refusedProviderMessage = "refused_provider_message"
    /// The recovery schedule asked the provider until it gave up (about 24 hours; `RecoveryPlan`), or the provider's
    /// answer could not be applied: the last outcome says which. Listed once it ends, whatever `olderThan` says:
    /// the schedule's times are its own clock's.
    case unrecoverable
    /// A purchase an older app's receipt listed beside the one its order was given, that no order holds: paid, per
    /// the receipt (not verified: ask Apple), and credited to nobody (schema/019). Listed until an order takes it.
    case unclaimedPurchase = "unclaimed_purchase"
    /// A claim of a subscription by another account than its owner, refused under the `keep` policy (from the refusal
    /// log): a restore or a login on someone else's account. The order listed is the owner's first purchase's, if any.
    case refusedClaim = "refused_claim"
    /// A subscription's paid period (a renewal; the first purchase is its order's) that the backend never credited
    /// (`POST /v1/subscriptions/{id}/grants`), while nothing took it back: Apple renewed, the customer got nothing.
    case renewalNotCredited = "renewal_not_credited"
    /// A subscription's period the backend credited after it had ended (expired, refunded or revoked): access given
    /// past the entitlement.
    case accessAfterExpiry = "access_after_expiry"

    /// A time in a detail's text written as every other time the ledger prints (RFC 3339, UTC, microseconds), not in
    /// PostgreSQL's own `2026-11-25 04:19:42.344671+00`.
    fileprivate static func rfc3339(_ column: String) -> String {
        "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    }

    /// How old a case must be before it is reported (`olderThan` overrides it).
    public var defaultThreshold: Duration {
        switch self {
        case .lostOrder, .paidNotGranted, .renewalNotCredited: .seconds(600)
        case .notFinished: .seconds(3600)
        case .stuckPayment: .seconds(86_400)
        case .finishedBeforeGrant, .lateReceipt, .refundedBeforeGrant, .refusedGrant, .refundedAtProvider,
             .amountMismatch, .unknownProviderTransaction, .consumptionRequest, .refusedProviderMessage, .unrecoverable,
             .unclaimedPurchase, .refusedClaim, .accessAfterExpiry: .zero
        }
    }

    /// The query for this kind: order id, account, state, since, detail, a key that with `since` orders the kind's
    /// rows totally (the order id; a refusal's id, zero-padded so text order is number order: an order can be refused
    /// twice at one instant), for keyset pages, and the money at stake (minor units and currency: the order's, or the
    /// provider's when no order holds it; null when nothing says); `$1` is the threshold in seconds.
    fileprivate var sql: String {
        func select(_ since: String, _ detail: String, _ condition: String) -> String {
            "SELECT order_id, account_id, state, \(since), \(detail), order_id, amount_value, currency FROM orders "
                + "WHERE \(condition) AND \(since) < now() - make_interval(secs => $1)"
        }
        switch self {
        case .lostOrder:
            // Said by state: only `verified` is proven paid; the time is the row's own `since`, not repeated here.
            return select("updated_at", """
                CASE state WHEN 'verified' THEN 'paid (verified), not credited'
                           WHEN 'receipt_received' THEN 'receipt received, never verified: not credited'
                           ELSE 'verification failed, retryable: paid or not, not credited' END
                """, "state IN ('receipt_received', 'verification_failed', 'verified')")
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
                       r.code || ' by ' || r.actor || ' for transaction ' || coalesce(r.transaction_id, '') || ': ' || r.details::text,
                       lpad(r.id::text, 20, '0'), o.amount_value, o.currency
                FROM refusals r LEFT JOIN orders o USING (order_id)
                WHERE r.event_type = 'order.granted' AND r.code IN ('account_mismatch', 'already_granted')
                  AND r.recorded_at < now() - make_interval(secs => $1)
                """
        case .paidNotGranted:
            return """
                SELECT o.order_id, o.account_id, o.state, p.paid_at,
                       'paid at ' || p.provider || ' (' || p.notification_type || ', transaction '
                           || coalesce(p.transaction_id, '') || '), not granted: ' || o.state,
                       o.order_id, o.amount_value, o.currency
                FROM orders o
                JOIN LATERAL (SELECT provider, notification_type, transaction_id, recorded_at AS paid_at
                              FROM provider_messages m WHERE m.order_id = o.order_id AND m.effect = 'payment'
                              ORDER BY recorded_at LIMIT 1) p ON true
                WHERE o.granted_at IS NULL AND p.paid_at < now() - make_interval(secs => $1)
                """
        case .refundedAtProvider, .amountMismatch, .consumptionRequest:
            let (effects, condition, detail) = switch self {
            case .refundedAtProvider:
                (["refund"], "o.granted_at IS NOT NULL", "'refunded at ' || m.provider || ' after the grant of ' || \(Self.rfc3339("o.granted_at"))")
            case .amountMismatch:
                // A price not in whole minor units has no amount in the row: its event says so.
                (["payment", "refund"], """
                 ((m.amount_value IS NOT NULL AND CASE m.effect
                     WHEN 'payment' THEN (m.amount_value, m.currency) IS DISTINCT FROM (o.amount_value, o.currency)
                     ELSE m.currency IS DISTINCT FROM o.currency OR m.amount_value > o.amount_value END)
                  OR (m.effect = 'payment' AND m.amount_value IS NULL AND EXISTS (
                     SELECT 1 FROM events e
                     WHERE e.kind = 'order' AND e.stream_id = m.order_id AND e.type = 'provider.notified'
                       AND e.data->>'provider' = m.provider
                       AND e.data->>'notificationId' = m.notification_id AND e.data->'unconvertedPrice' IS NOT NULL)))
                 """,
                 "m.provider || ' says ' || m.effect || ' ' || coalesce(m.amount_value || ' ' || m.currency, 'a price not in whole minor units') || ', the order ' || o.amount_value || ' ' || o.currency")
            default:
                // What the ledger answered, when it did (schema/028): finance sees the request and its answer together.
                (["consumption_request"], "true", """
                 'Apple asks for consumption information (transaction ' || coalesce(m.transaction_id, '') || ')'
                     || coalesce((SELECT '; answered ' || (a.body->>'deliveryStatus')
                                         || coalesce(', ' || (a.body->>'refundPreference'), '') || ' at ' || \(Self.rfc3339("a.sent_at"))
                                  FROM consumption_answers a WHERE a.notification_id = m.notification_id AND a.sent_at IS NOT NULL), '')
                 """)
            }
            return """
                SELECT o.order_id, o.account_id, o.state, m.recorded_at, \(detail), m.provider || ':' || m.notification_id,
                       o.amount_value, o.currency
                FROM provider_messages m JOIN orders o USING (order_id)
                WHERE m.effect IN (\(effects.map { "'\($0)'" }.joined(separator: ", "))) AND \(condition) AND m.recorded_at < now() - make_interval(secs => $1)
                """
        case .unknownProviderTransaction:
            return """
                SELECT coalesce(named_order_id, ''), '', 'unmatched', recorded_at,
                       provider || ' ' || notification_type || ' for transaction ' || coalesce(transaction_id, '')
                           || coalesce(' (order ' || named_order_id || ' is not in the ledger)', ': no order has its appAccountToken or transaction'),
                       provider || ':' || notification_id, amount_value, currency
                FROM provider_messages WHERE order_id IS NULL AND refused IS NULL AND recorded_at < now() - make_interval(secs => $1)
                """
        case .unrecoverable:
            return """
                SELECT r.order_id, o.account_id, o.state, r.ended_at,
                       'asked ' || r.provider || ' ' || r.attempts || ' times since ' || \(Self.rfc3339("r.entered_at"))
                           || ' (' || r.reason || '); last: ' || coalesce(r.last_outcome, '') || ': ' || coalesce(r.last_said, ''),
                       r.order_id, o.amount_value, o.currency
                FROM recovery_schedule r JOIN orders o USING (order_id)
                WHERE r.status = 'unrecoverable' AND make_interval(secs => $1) IS NOT NULL
                """
        case .unclaimedPurchase:
            return """
                SELECT p.order_id, coalesce(o.account_id, ''), 'unclaimed', p.recorded_at,
                       'app_store transaction ' || p.transaction_id || ' of ' || p.product_id
                           || coalesce(', bought ' || \(Self.rfc3339("p.purchased_at")), '')
                           || ', listed in the receipt sent for order ' || p.order_id
                           || ', belongs to no order (read from the receipt, not verified: ask Apple)',
                       p.transaction_id, NULL::bigint, NULL::text
                FROM receipt_purchases p LEFT JOIN orders o USING (order_id)
                WHERE NOT EXISTS (SELECT 1 FROM order_transactions t WHERE t.transaction_id = p.transaction_id)
                  AND p.recorded_at < now() - make_interval(secs => $1)
                """
        case .refusedClaim:
            return """
                SELECT coalesce(s.order_id, ''), coalesce(r.details->>'owner', ''), 'subscription', r.recorded_at,
                       'account ' || coalesce(r.details->>'claimant', '') || ' claimed subscription ' || r.order_id
                           || ' with transaction ' || coalesce(r.transaction_id, '') || ' (by ' || r.actor
                           || '): refused, it belongs to account ' || coalesce(r.details->>'owner', ''),
                       lpad(r.id::text, 20, '0'), NULL::bigint, NULL::text
                FROM refusals r LEFT JOIN subscriptions s ON s.subscription_id = r.order_id
                WHERE r.event_type = 'subscription.claimed' AND r.code = 'account_mismatch'
                  AND r.recorded_at < now() - make_interval(secs => $1)
                """
        case .renewalNotCredited:
            return """
                SELECT coalesce(s.order_id, ''), s.account_id, 'subscription', t.purchased_at,
                       'subscription ' || t.subscription_id || ' renewed (transaction ' || t.transaction_id || ', '
                           || t.product_id || ', until ' || \(Self.rfc3339("t.expires_at")) || '), never credited',
                       t.transaction_id, t.price_value, t.currency
                FROM subscription_transactions t JOIN subscriptions s USING (subscription_id)
                WHERE t.granted_at IS NULL AND t.revoked_at IS NULL AND t.environment = 'production'
                  AND s.account_id IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM order_transactions o WHERE o.transaction_id = t.transaction_id)
                  AND t.purchased_at < now() - make_interval(secs => $1)
                """
        case .accessAfterExpiry:
            return """
                SELECT coalesce(s.order_id, ''), coalesce(s.account_id, ''), 'subscription', t.granted_at,
                       'subscription ' || t.subscription_id || ': transaction ' || t.transaction_id || ' credited at '
                           || \(Self.rfc3339("t.granted_at")) || ', after its period ended at '
                           || \(Self.rfc3339("least(t.expires_at, t.revoked_at)")),
                       t.transaction_id, t.price_value, t.currency
                FROM subscription_transactions t JOIN subscriptions s USING (subscription_id)
                WHERE t.granted_at > least(t.expires_at, t.revoked_at)
                  AND t.granted_at < now() - make_interval(secs => $1)
                """
        case .refusedProviderMessage:
            return """
                SELECT coalesce(m.named_order_id, ''), coalesce(o.account_id, ''), coalesce(o.state, 'unmatched'), m.recorded_at,
                       m.provider || ' ' || m.notification_type || ' kept, not applied: ' || m.refused,
                       m.provider || ':' || m.notification_id, m.amount_value, m.currency
                FROM provider_messages m LEFT JOIN orders o ON o.order_id = m.named_order_id
                WHERE m.refused IS NOT NULL AND m.recorded_at < now() - make_interval(secs => $1)
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
    /// The money at stake: the order's amount, or the provider's when no order holds the message; nil when nothing
    /// says (a receipt's purchase, whose price the receipt does not give).
    public var amount: Money?
}

/// Finds anomalies in the projections and the refusal log; read-only.
struct AnomalyFinder: Sendable {
    let client: SessionPool
    let logger: Logger

    init(client: SessionPool, logger: Logger = Logger(label: "ledger.finance")) {
        self.client = client
        self.logger = logger
    }

    /// Anomalies of `kinds` (all when empty), each older than `olderThan` or its kind's default threshold.
    /// A kind named twice is looked for once (the callers refuse the repeat; this keeps an order from being listed
    /// twice if one ever gets through).
    func find(kinds: [AnomalyKind] = [], olderThan: Duration? = nil) async throws -> [Anomaly] {
        var found: [Anomaly] = []
        var asked: [AnomalyKind] = []
        for kind in kinds.isEmpty ? AnomalyKind.allCases : kinds where !asked.contains(kind) { asked.append(kind) }
        for kind in asked {
            let threshold = Double((olderThan ?? kind.defaultThreshold).components.seconds)
            var query = PostgresQuery(unsafeSQL: kind.sql + " ORDER BY 4, 1")
            query.binds.append(threshold)
            found += try await client.query(query, .reads, logger: logger) { rows in
                var found: [Anomaly] = []
                for try await (orderId, accountId, state, since, detail, _, value, currency)
                    in rows.decode((String, String, String, Date, String, String, Int64?, String?).self) {
                    found.append(Anomaly(
                        kind: kind, orderId: orderId, accountId: accountId, state: state, since: since, detail: detail,
                        amount: Self.money(value, currency)))
                }
                return found
            }
        }
        return found
    }
}

extension AnomalyFinder {
    /// An amount read from a row: both columns, or none.
    static func money(_ value: Int64?, _ currency: String?) -> Money? {
        guard let value, let currency else { return nil }
        return Money(value: value, currency: currency)
    }
}

/// A page of anomalies and the cursor of the next one (nil on the last).
public struct AnomalyPage: Sendable, Hashable {
    public var anomalies: [Anomaly]
    public var nextCursor: AnomalyCursor?
}

/// Where a page of anomalies ended: the last anomaly's kind, `since` and key. Rows are listed kind by kind (in the
/// order asked, else `AnomalyKind.allCases`), each kind by (`since`, key), so the next page starts right after the
/// cursor: an anomaly present on both sides of a page boundary is listed exactly once, one that appears in between
/// is listed if it sorts after the cursor, one resolved in between is not.
/// Written `KIND,SINCE,KEY` (`lost_order,2026-11-22T10:00:00.123456Z,order-1`): since to the microsecond, like
/// every time the ledger prints, so it names the same instant.
public struct AnomalyCursor: Sendable, Hashable, CustomStringConvertible {
    public var kind: AnomalyKind
    public var since: Date
    public var key: String

    public init(kind: AnomalyKind, since: Date, key: String) {
        self.kind = kind
        self.since = since
        self.key = key
    }

    /// Nil when `text` is not a cursor this ledger wrote.
    public init?(_ text: String) {
        let parts = text.split(separator: ",", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let kind = parts.first.flatMap(AnomalyKind.init(rawValue:)),
              let since = RFC3339.parse(parts[1]), let key = parts.last, !key.isEmpty else { return nil }
        self.init(kind: kind, since: since, key: key)
    }

    public var description: String { "\(kind.rawValue),\(RFC3339.format(since)),\(key)" }
}

extension AnomalyFinder {
    /// At most `limit` anomalies of `kinds` (all when empty; each kind once, in the order given) after `cursor`,
    /// each older than `olderThan` or its kind's default threshold, of the order `orderId` only when given (what an
    /// order's own page lists). Memory holds one page, never the whole list.
    /// A cursor whose kind is not among `kinds` ends the listing: nothing comes after it (the API refuses it first).
    func page(
        kinds: [AnomalyKind] = [], olderThan: Duration? = nil, orderId: String? = nil, limit: Int,
        after cursor: AnomalyCursor? = nil
    ) async throws -> AnomalyPage {
        let limit = max(1, min(limit, Int(Int32.max)))
        var asked: [AnomalyKind] = []
        for kind in kinds.isEmpty ? AnomalyKind.allCases : kinds where !asked.contains(kind) { asked.append(kind) }
        var remaining = asked[...]
        if let cursor {
            remaining = remaining.drop { $0 != cursor.kind }
            if remaining.isEmpty { return AnomalyPage(anomalies: [], nextCursor: nil) }
        }
        // One more than the page, to know whether another follows.
        var found: [(anomaly: Anomaly, key: String)] = []
        for kind in remaining where found.count <= limit {
            let start = cursor?.kind == kind ? cursor : nil
            found += try await rows(of: kind, olderThan: olderThan, orderId: orderId, after: start, limit: limit + 1 - found.count)
        }
        let more = found.count > limit
        if more { found.removeLast() }
        let next = more ? found.last.map { AnomalyCursor(kind: $0.anomaly.kind, since: $0.anomaly.since, key: $0.key) } : nil
        return AnomalyPage(anomalies: found.map(\.anomaly), nextCursor: next)
    }

    /// At most `limit` rows of one kind after `cursor` (from the first when nil), by (`since`, key), of `orderId`
    /// only when given. The filter is on the kind's own `order_id` column, so every kind is filtered alike;
    /// PostgreSQL pushes it into the kind's query.
    private func rows(
        of kind: AnomalyKind, olderThan: Duration?, orderId: String?, after cursor: AnomalyCursor?, limit: Int
    ) async throws -> [(anomaly: Anomaly, key: String)] {
        let threshold = Double((olderThan ?? kind.defaultThreshold).components.seconds)
        var conditions: [String] = []
        var query = PostgresQuery(unsafeSQL: "")
        query.binds.append(threshold)
        query.binds.append(limit)
        if let cursor {
            query.binds.append(Timestamp(cursor.since))
            query.binds.append(cursor.key)
            conditions.append("(since, key) > ($\(query.binds.count - 1), $\(query.binds.count))")
        }
        if let orderId {
            query.binds.append(orderId)
            conditions.append("order_id = $\(query.binds.count)")
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        query.sql = """
            SELECT order_id, account_id, state, since, detail, key, amount_value, currency
            FROM (\(kind.sql)) AS found (order_id, account_id, state, since, detail, key, amount_value, currency)
            \(filter) ORDER BY since, key LIMIT $2
            """
        return try await client.query(query, .reads, logger: logger) { rows in
            var found: [(anomaly: Anomaly, key: String)] = []
            for try await (orderId, accountId, state, since, detail, key, value, currency)
                in rows.decode((String, String, String, Date, String, String, Int64?, String?).self) {
                found.append((Anomaly(
                    kind: kind, orderId: orderId, accountId: accountId, state: state, since: since, detail: detail,
                    amount: AnomalyFinder.money(value, currency)), key))
            }
            return found
        }
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
