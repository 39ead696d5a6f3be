import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The recovery schedule's entry point (`LedgerDatabase.recovery`): the one owner of `recovery_schedule` and
/// `recovery_attempts` (schema/014). It keeps the rows; `RecoveryPlan` (LedgerCore) says when to ask, and
/// `LedgerRecovery` asks. Every time comes from the caller's clock, so a test runs a day of schedule in a second.
///
/// Two nodes never ask about one order at once: an order is asked about only under a lease, taken with `FOR UPDATE
/// SKIP LOCKED` (or, for one order asked by a person, an upsert that takes it only when free), and given back with the
/// attempt's outcome. A node killed mid-attempt loses nothing: its lease runs out and the order is due again.
public struct RecoverySchedule: Sendable {
    let pools: EventLoopPools
    let logger: Logger

    /// The pool of the caller's event loop (`EventLoopPools`).
    var client: SessionPool { pools.current }

    /// Enters every order the rules say may be lost: a receipt unverified or a retryable verification failure for
    /// `plan.receiptUnverifiedAfter`, a queued payment with nothing for `plan.paymentUnansweredAfter` — of a
    /// `provider` the ledger can ask. An order that ended on the schedule enters again only once it has moved since.
    /// Returns how many entered.
    @discardableResult
    public func enrol(now: Date, plan: RecoveryPlan, providers: [Provider]) async throws -> Int {
        let receiptBefore = now.addingTimeInterval(-plan.receiptUnverifiedAfter.seconds)
        let paymentBefore = now.addingTimeInterval(-plan.paymentUnansweredAfter.seconds)
        let providers = providers.map(\.rawValue)
        return try await count("""
            INSERT INTO recovery_schedule (order_id, provider, reason, status, entered_at, order_version, next_attempt_at)
            SELECT o.order_id, o.provider,
                   CASE o.state WHEN 'payment_queued' THEN 'payment_unanswered'
                                WHEN 'receipt_received' THEN 'receipt_unverified' ELSE 'verification_retryable' END,
                   'pending', \(now), o.version, \(now)
            FROM orders o
            WHERE ((o.state IN ('receipt_received', 'verification_failed') AND o.updated_at <= \(receiptBefore))
                   OR (o.state = 'payment_queued' AND o.updated_at <= \(paymentBefore)))
              AND o.provider = ANY(\(providers))
              AND NOT EXISTS (SELECT 1 FROM recovery_schedule r
                              WHERE r.order_id = o.order_id AND (r.status = 'pending' OR r.order_version = o.version))
            ON CONFLICT (order_id) DO UPDATE
                SET reason = EXCLUDED.reason, status = 'pending', entered_at = EXCLUDED.entered_at,
                    order_version = EXCLUDED.order_version, attempts = 0, next_attempt_at = EXCLUDED.next_attempt_at,
                    lease = NULL, leased_until = NULL, ended_at = NULL
                WHERE recovery_schedule.status <> 'pending'
            RETURNING 1
            """)
    }

    /// Takes up to `limit` due orders (of `provider` only, when given) for this node to ask about, oldest due first,
    /// each held for `plan.lease`. Orders another node holds are skipped, never waited for.
    public func claimDue(now: Date, plan: RecoveryPlan, limit: Int, of provider: Provider? = nil) async throws -> [RecoveryClaim] {
        let lease = UUID()
        let until = now.addingTimeInterval(plan.lease.seconds)
        return try await claims(lease: lease, """
            UPDATE recovery_schedule s SET lease = \(lease), leased_until = \(until)
            FROM (SELECT order_id FROM recovery_schedule
                  WHERE status = 'pending' AND next_attempt_at <= \(now) AND (leased_until IS NULL OR leased_until <= \(now))
                    AND (\(provider?.rawValue)::text IS NULL OR provider = \(provider?.rawValue))
                  ORDER BY next_attempt_at LIMIT \(limit)
                  FOR UPDATE SKIP LOCKED) due
            WHERE s.order_id = due.order_id
            RETURNING s.order_id, s.provider, s.reason, s.attempts
            """)
    }

    /// Takes one order for a person's question (`ledger recover`, `POST /v1/orders/{id}/recover`), entering it on the
    /// schedule if it is not there (reason `asked`) or has ended there. Nil when another node is asking about it now,
    /// or when it was last asked after `askedNotSince` (`lastAskedAt` says which).
    public func claim(_ order: Order, now: Date, plan: RecoveryPlan, askedNotSince: Date? = nil) async throws -> RecoveryClaim? {
        let lease = UUID()
        let until = now.addingTimeInterval(plan.lease.seconds)
        return try await claims(lease: lease, """
            INSERT INTO recovery_schedule (order_id, provider, reason, status, entered_at, order_version, next_attempt_at, lease, leased_until)
            VALUES (\(order.orderId), \(order.provider.rawValue), 'asked', 'pending', \(now), \(order.version), \(now), \(lease), \(until))
            ON CONFLICT (order_id) DO UPDATE
                SET lease = EXCLUDED.lease, leased_until = EXCLUDED.leased_until,
                    reason = CASE WHEN recovery_schedule.status = 'pending' THEN recovery_schedule.reason ELSE 'asked' END,
                    attempts = CASE WHEN recovery_schedule.status = 'pending' THEN recovery_schedule.attempts ELSE 0 END,
                    entered_at = CASE WHEN recovery_schedule.status = 'pending' THEN recovery_schedule.entered_at ELSE EXCLUDED.entered_at END,
                    status = 'pending', ended_at = NULL
                WHERE (recovery_schedule.leased_until IS NULL OR recovery_schedule.leased_until <= \(now))
                  AND (\(askedNotSince)::timestamptz IS NULL OR recovery_schedule.last_attempt_at IS NULL
                       OR recovery_schedule.last_attempt_at <= \(askedNotSince))
            RETURNING order_id, provider, reason, attempts
            """).first
    }

    /// When the order was last asked about, by anyone (nil: never).
    public func lastAskedAt(_ orderId: String) async throws -> Date? {
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining, .reads) { connection in
            var last: Date?
            for try await at in try await connection.statement(
                "SELECT last_attempt_at FROM recovery_schedule WHERE order_id = \(orderId)", logger: logger
            ).decode(Date?.self) { last = at }
            return last
        }
    }

    /// Records the attempt and gives the order back: ended (`recovered`, `unrecoverable`) or due again as `plan` says,
    /// counted from when it was asked, and never before `notBefore` (the time the provider said it may be asked
    /// again). A person's question (`countsForPlan` false) uses none of the plan's attempts: unless its answer ends
    /// the schedule, the order stays due when it was, or `plan.personAskInterval` after the question if that
    /// is later. Returns where the order stands. An attempt made under a lease that ran out (another node has the
    /// order now) is still recorded; the schedule is left to that node.
    @discardableResult
    public func complete(
        _ claim: RecoveryClaim, attempt: RecoveryAttempt, plan: RecoveryPlan, notBefore: Date? = nil, countsForPlan: Bool = true
    ) async throws -> RecoveryEntry.Next {
        let ended: RecoveryStatus? =
            if let ends = attempt.outcome.endsSchedule { ends }
            else if countsForPlan, plan.nextAttempt(afterAttempts: attempt.attempt, at: attempt.askedAt) == nil { .unrecoverable }
            else { nil }
        // The earliest the next attempt may be: the plan's (or a person's rest), and the provider's word.
        let rest = countsForPlan
            ? plan.nextAttempt(afterAttempts: attempt.attempt, at: attempt.askedAt)
            : attempt.askedAt.addingTimeInterval(plan.personAskInterval.seconds)
        let floor = rest.map { max($0, notBefore ?? $0) }
        let status = ended ?? .pending
        let logger = self.logger
        let due: Date? = try await client.withConnection(within: Deadline.remaining) { connection in
            var due: Date?
            for try await next in try await connection.statement("""
                WITH attempt AS (
                    INSERT INTO recovery_attempts (order_id, attempt, provider, asked_by, asked_at, duration_ms, outcome, said, provider_words, answer, recorded)
                    VALUES (\(attempt.orderId), \(attempt.attempt), \(attempt.provider), \(attempt.askedBy), \(attempt.askedAt),
                            \(attempt.durationMilliseconds), \(attempt.outcome.rawValue), \(attempt.said), \(attempt.providerWords),
                            \(attempt.answer?.canonicalJSON)::jsonb, \(attempt.recorded))
                )
                UPDATE recovery_schedule
                SET attempts = CASE WHEN \(countsForPlan) THEN \(attempt.attempt) ELSE attempts END,
                    last_attempt_at = \(attempt.askedAt), last_outcome = \(attempt.outcome.rawValue),
                    last_said = \(attempt.said), status = \(status.rawValue),
                    next_attempt_at = CASE WHEN \(countsForPlan) THEN coalesce(\(floor), next_attempt_at)
                                           ELSE greatest(next_attempt_at, \(floor)) END,
                    ended_at = \(ended == nil ? nil : attempt.askedAt), lease = NULL, leased_until = NULL,
                    order_version = coalesce((SELECT version FROM orders WHERE order_id = \(claim.orderId)), order_version)
                WHERE order_id = \(claim.orderId) AND lease = \(claim.lease)
                RETURNING next_attempt_at
                """, logger: logger).decode(Date.self) { due = next }
            return due
        }
        if let ended { return .ended(ended) }
        // The plan's own time when it set it (exactly as computed); a person's question left the stored one.
        return .due(countsForPlan ? (floor ?? attempt.askedAt) : (due ?? floor ?? attempt.askedAt))
    }

    /// Ends an order the schedule need not ask about any more: it moved on by itself (verified, cancelled…).
    public func settle(_ claim: RecoveryClaim, now: Date) async throws {
        _ = try await count("""
            UPDATE recovery_schedule
            SET status = 'settled', ended_at = \(now), lease = NULL, leased_until = NULL,
                order_version = coalesce((SELECT version FROM orders WHERE order_id = \(claim.orderId)), order_version)
            WHERE order_id = \(claim.orderId) AND lease = \(claim.lease)
            RETURNING 1
            """)
    }

    /// Gives an order back unasked (a dry run), due as it was.
    public func release(_ claim: RecoveryClaim) async throws {
        _ = try await count(
            "UPDATE recovery_schedule SET lease = NULL, leased_until = NULL WHERE order_id = \(claim.orderId) AND lease = \(claim.lease) RETURNING 1")
    }

    // MARK: Sweeps

    /// Takes the sweep of `source` for this node when it is due (`plan.sweepEvery` after the last one ended, or at
    /// once while a window is only partly read) and no other node holds it; returns where the last sweep ended (the
    /// first starts `plan.firstSweepReach` back) and the window being read with its next page's token, or nil.
    public func claimSweep(_ source: String, now: Date, plan: RecoveryPlan) async throws -> RecoverySweepClaim? {
        let lease = UUID()
        let first = now.addingTimeInterval(-plan.firstSweepReach.seconds)
        let dueBefore = now.addingTimeInterval(-plan.sweepEvery.seconds)
        let until = now.addingTimeInterval(plan.lease.seconds)
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining) { connection in
            try await connection.queryToEnd(
                "INSERT INTO recovery_sweeps (source, swept_until) VALUES (\(source), \(first)) ON CONFLICT (source) DO NOTHING",
                logger: logger)
            var claim: RecoverySweepClaim?
            for try await (sweptUntil, windowStart, windowEnd, pageToken) in try await connection.statement("""
                UPDATE recovery_sweeps SET lease = \(lease), leased_until = \(until)
                WHERE source = \(source) AND (swept_until <= \(dueBefore) OR window_start IS NOT NULL)
                  AND (leased_until IS NULL OR leased_until <= \(now))
                RETURNING swept_until, window_start, window_end, page_token
                """, logger: logger).decode((Date, Date?, Date?, String?).self) {
                var place: RecoverySweepClaim.Place?
                if let windowStart, let windowEnd {
                    place = .init(windowStart: windowStart, windowEnd: windowEnd, nextPageToken: pageToken)
                }
                claim = RecoverySweepClaim(source: source, sweptUntil: sweptUntil, lease: lease, place: place)
            }
            return claim
        }
    }

    /// Keeps the sweep's place after a page was recorded: the window it is reading and the token of the next page.
    /// Returns false when the lease was lost (run out, and another node took the sweep): the sweep stops there.
    public func keepSweepPlace(_ claim: RecoverySweepClaim, _ place: RecoverySweepClaim.Place) async throws -> Bool {
        try await count("""
            UPDATE recovery_sweeps SET window_start = \(place.windowStart), window_end = \(place.windowEnd),
                page_token = \(place.nextPageToken)
            WHERE source = \(claim.source) AND lease = \(claim.lease)
            RETURNING 1
            """) == 1
    }

    /// Gives the sweep back, swept up to `until` (the end of the window whose last page was read): the window and
    /// its token are forgotten, and the next sweep is due `plan.sweepEvery` later.
    public func completeSweep(_ claim: RecoverySweepClaim, until: Date) async throws {
        _ = try await count("""
            UPDATE recovery_sweeps SET swept_until = \(until), lease = NULL, leased_until = NULL,
                window_start = NULL, window_end = NULL, page_token = NULL
            WHERE source = \(claim.source) AND lease = \(claim.lease)
            RETURNING 1
            """)
    }

    /// Gives the sweep back before its window was read to the end (a round's pages were read, or asking failed):
    /// its place stays, and the next round goes on from it. With `forgettingPlace`, the window is dropped instead
    /// (Apple refused its token): the next round starts a new window from `swept_until`.
    public func releaseSweep(_ claim: RecoverySweepClaim, forgettingPlace: Bool = false) async throws {
        _ = try await count("""
            UPDATE recovery_sweeps SET lease = NULL, leased_until = NULL,
                window_start = CASE WHEN \(forgettingPlace) THEN NULL ELSE window_start END,
                window_end = CASE WHEN \(forgettingPlace) THEN NULL ELSE window_end END,
                page_token = CASE WHEN \(forgettingPlace) THEN NULL ELSE page_token END
            WHERE source = \(claim.source) AND lease = \(claim.lease)
            RETURNING 1
            """)
    }

    /// When the next pending order is due (nil: none is pending): how long the schedule may sleep.
    public func nextDue() async throws -> Date? {
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining) { connection in
            var due: Date?
            for try await next in try await connection.statement(
                "SELECT min(next_attempt_at) FROM recovery_schedule WHERE status = 'pending'", logger: logger
            ).decode(Date?.self) { due = next }
            return due
        }
    }

    /// The schedule's columns of an order, as `r.…` of a statement that joins `recovery_schedule AS r`
    /// (`Ledger.orderAndRecovery`); `entry(of:from:at:)` reads them back.
    static let entryColumnsOfR = "r.provider, r.reason, r.status, r.entered_at, r.attempts, r.next_attempt_at, r.ended_at"

    /// The entry in `entryColumnsOfR` from column `start`, without its attempts; nil when the order was never on
    /// the schedule (the outer join found no row).
    static func entry(of orderId: String, from columns: PostgresRandomAccessRow, at start: Int) throws -> RecoveryEntry? {
        guard let provider = try columns[start].decode(String?.self) else { return nil }
        let reason = try columns[start + 1].decode(String.self), status = try columns[start + 2].decode(String.self)
        guard let reason = RecoveryReason(rawValue: reason) else { throw CorruptRow(column: "reason", value: reason) }
        guard let status = RecoveryStatus(rawValue: status) else { throw CorruptRow(column: "status", value: status) }
        return RecoveryEntry(
            orderId: orderId, provider: provider, reason: reason, status: status,
            enteredAt: try columns[start + 3].decode(Date.self), attemptCount: try columns[start + 4].decode(Int.self),
            next: status == .pending ? .due(try columns[start + 5].decode(Date.self)) : .ended(status),
            endedAt: try columns[start + 6].decode(Date?.self), attempts: [])
    }

    /// The order's latest attempts, newest first, at most `limit`.
    static func attempts(
        of orderId: String, limit: Int, on connection: PostgresConnection, logger: Logger
    ) async throws -> [RecoveryAttempt] {
        var attempts: [RecoveryAttempt] = []
        for try await (attempt, provider, askedBy, askedAt, duration, outcome, said, words, answer, recorded)
            in try await connection.statement("""
                SELECT attempt, provider, asked_by, asked_at, duration_ms, outcome, said, provider_words, answer::text, recorded
                FROM recovery_attempts WHERE order_id = \(orderId) ORDER BY id DESC LIMIT \(limit)
                """, logger: logger).decode((Int, String, String, Date, Int, String, String, String?, String?, [String]).self) {
            guard let outcome = RecoveryOutcome(rawValue: outcome) else { throw CorruptRow(column: "outcome", value: outcome) }
            attempts.append(RecoveryAttempt(
                orderId: orderId, attempt: attempt, provider: provider, askedBy: askedBy, askedAt: askedAt,
                durationMilliseconds: duration, outcome: outcome, said: said, providerWords: words,
                answer: try answer.map { try JSONValue(parsing: Array($0.utf8)) }, recorded: recorded))
        }
        return attempts
    }

    // MARK: Statements

    private func claims(lease: UUID, _ query: PostgresQuery) async throws -> [RecoveryClaim] {
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining) { connection in
            var claims: [RecoveryClaim] = []
            for try await (orderId, provider, reason, attempts)
                in try await connection.statement(query, logger: logger).decode((String, String, String, Int).self) {
                guard let reason = RecoveryReason(rawValue: reason) else { throw CorruptRow(column: "reason", value: reason) }
                claims.append(RecoveryClaim(orderId: orderId, provider: provider, reason: reason, attempts: attempts, lease: lease))
            }
            return claims
        }
    }

    /// Runs a statement that returns a row per row it changed; returns how many (`SessionPool.countRows`).
    func count(_ query: PostgresQuery) async throws -> Int {
        try await client.countRows(query, logger: logger)
    }
}
