import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerProviders
import LedgerRecovery
import LedgerTestSupport
import PostgresNIO
import ProviderTestSupport
import Testing

/// A campaign of WeChat Pay purchases with everything that goes wrong in the field, run on the schedule's clock so
/// that a day of schedule takes a minute: 10 % never pay; of those who pay, a third of the apps die before telling
/// the backend (no receipt), a fifth of WeChat Pay's notifications never arrive, and WeChat Pay answers 500 to every
/// query for an hour. Two nodes run the schedule side by side. Every paid order must end verified, exactly once;
/// every unpaid one listed unrecoverable.
///
/// `swift test` runs 120 purchases (it shares two cores with the whole suite); `scripts/bench/recovery` runs 10,000
/// (`RECOVERY_CAMPAIGN_PURCHASES`) and keeps the report line this prints.
@Suite("Recovery: a campaign of purchases with faults")
struct RecoveryCampaignTests {
    static let purchases = ProcessInfo.processInfo.environment["RECOVERY_CAMPAIGN_PURCHASES"].flatMap(Int.init) ?? 120

    struct Purchase {
        let orderId: String
        let transactionId: String
        /// When the user paid (nil: never), and when the app told the backend (nil: it died) or WeChat Pay's
        /// notification arrived (nil: it never did), in schedule time.
        let paidAt: Date?
        let receiptAt: Date?
        let notifiedAt: Date?
    }

    enum Happening: Comparable {
        case paid(Int), receipt(Int), notified(Int), outageStarts, outageEnds
    }

    @Test func everyPaidOrderIsRecoveredExactlyOnceWhateverWentWrong() async throws {
        try await RecoveryHarness.run { harness in
            let wall = ContinuousClock.now
            var random = SeededRandom(seed: UInt64(Date().timeIntervalSince1970))
            let seed = random.seed
            // The orders, as the apps create them and queue their payment.
            let ids = (0..<Self.purchases).map { "c-\($0)" }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for chunk in stride(from: 0, to: ids.count, by: ids.count / 8 + 1) {
                    group.addTask {
                        for orderId in ids[chunk..<min(ids.count, chunk + ids.count / 8 + 1)] {
                            try await harness.queuedOrder(orderId)
                            harness.wechat.hold(orderId: orderId, state: "NOTPAY", transactionId: nil)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let start = Date()
            harness.clock.set(start)
            let purchases: [Purchase] = ids.enumerated().map { index, orderId in
                let paid = random.unit() < 0.9
                let paidAt = paid ? start.addingTimeInterval(random.unit() * 1800) : nil
                return Purchase(
                    orderId: orderId, transactionId: String(format: "42000012342026112%013d", index), paidAt: paidAt,
                    receiptAt: paid && random.unit() >= 1 / 3 ? paidAt?.addingTimeInterval(1 + random.unit() * 9) : nil,
                    notifiedAt: paid && random.unit() >= 0.2 ? paidAt?.addingTimeInterval(5 + random.unit() * 295) : nil)
            }
            var happenings: [(at: Date, what: Happening)] = [
                (start.addingTimeInterval(600), .outageStarts), (start.addingTimeInterval(4200), .outageEnds),
            ]
            for (index, purchase) in purchases.enumerated() {
                if let at = purchase.paidAt { happenings.append((at, .paid(index))) }
                if let at = purchase.receiptAt { happenings.append((at, .receipt(index))) }
                if let at = purchase.notifiedAt { happenings.append((at, .notified(index))) }
            }
            happenings.sort { ($0.at, $0.what) < ($1.at, $1.what) }

            let nodes = [harness.node(), harness.node()]
            var next = happenings.startIndex
            // The schedule's clock moves to whatever comes first: something happening, an order due, or (while a
            // paid order is still unverified) the next 30 s, so an order enters the schedule when it may.
            while true {
                let due = try await harness.database.recovery.nextDue()
                let unverified = next == happenings.endIndex ? try await Self.unverifiedPaid(purchases, harness) : 1
                let verifiedAll = unverified == 0
                let tick = verifiedAll ? nil : harness.clock.now.addingTimeInterval(30)
                guard let moment = [next < happenings.endIndex ? happenings[next].at : nil, due, tick].compactMap({ $0 }).min() else { break }
                harness.clock.set(max(moment, harness.clock.now))
                while next < happenings.endIndex, happenings[next].at <= harness.clock.now {
                    try await Self.happen(happenings[next].what, purchases, harness)
                    next += 1
                }
                while true {
                    let reports = try await withThrowingTaskGroup(of: [RecoveryReport].self) { group in
                        for node in nodes { group.addTask { try await node.runRound() } }
                        return try await group.reduce([], +)
                    }
                    if reports.isEmpty { break }
                }
            }

            // Every paid order verified, none twice; every unpaid one listed unrecoverable.
            let paid = purchases.filter { $0.paidAt != nil }
            #expect(try await Self.unverifiedPaid(purchases, harness) == 0, "seed \(seed)")
            let client = harness.database.client
            let twice = try await client.query(
                "SELECT count(*) FROM (SELECT stream_id FROM events WHERE type = 'receipt.verified' GROUP BY stream_id HAVING count(*) > 1) t", logger: RecoveryHarness.logger
            ) { rows in try await rows.decode(Int.self).reduce(0, +) }
            #expect(twice == 0, "double credits, seed \(seed)")
            let unrecoverable = try await harness.database.finance.anomalies(kinds: [.unrecoverable], limit: 100_000).anomalies
            #expect(Set(unrecoverable.map(\.orderId)) == Set(purchases.filter { $0.paidAt == nil }.map(\.orderId)), "seed \(seed)")
            #expect(try await harness.database.operations.verify().passed)

            // The report.
            let recoveredAt = try await client.query(
                "SELECT order_id, asked_at FROM recovery_attempts WHERE outcome = 'recovered' AND recorded <> '{}'", logger: RecoveryHarness.logger
            ) { rows in
                var found: [String: Date] = [:]
                for try await (orderId, askedAt) in rows.decode((String, Date).self) { found[orderId] = askedAt }
                return found
            }
            let waits = paid.compactMap { purchase in
                recoveredAt[purchase.orderId].flatMap { at in purchase.paidAt.map { at.timeIntervalSince($0) } }
            }.sorted()
            func percentile(_ p: Double) -> Int { waits.isEmpty ? 0 : Int(waits[min(waits.count - 1, Int(Double(waits.count) * p))]) }
            // Calls about the orders the schedule recovered (the unpaid ones are asked all day, by design).
            let calls = harness.wechat.requests.filter { request in
                request.split(separator: " ").last.map { recoveredAt[String($0)] != nil } ?? false
            }.count
            let verified = paid.count - (try await Self.unverifiedPaid(purchases, harness))
            print("""
                recovery campaign: \(Self.purchases) purchases, \(paid.count) paid, \(verified) \
                verified (\(recoveredAt.count) by the schedule, the rest by notification), \(twice) double credits, \
                \(purchases.count - paid.count) unpaid listed unrecoverable (\(unrecoverable.count)); time to recovery by the schedule \
                p50 \(percentile(0.5)) s, p99 \(percentile(0.99)) s of schedule time from payment (entry thresholds not simulated: \
                the events' own times are the database's); \(harness.wechat.requests.count) provider calls in all, \
                \(String(format: "%.2f", Double(calls) / Double(max(1, recoveredAt.count)))) per order the schedule recovered; \
                \(Int((ContinuousClock.now - wall).seconds)) s of wall time; seed \(seed)
                """)
        }
    }

    /// How many paid orders are not verified (or past it) yet.
    static func unverifiedPaid(_ purchases: [Purchase], _ harness: RecoveryHarness) async throws -> Int {
        let paid = purchases.filter { $0.paidAt != nil }.map(\.orderId)
        return try await harness.database.client.query(
            "SELECT count(*) FROM orders WHERE order_id = ANY(\(paid)) AND state NOT IN ('verified', 'granted', 'finished')", logger: RecoveryHarness.logger
        ) { rows in try await rows.decode(Int.self).reduce(0, +) }
    }

    static func happen(_ what: Happening, _ purchases: [Purchase], _ harness: RecoveryHarness) async throws {
        switch what {
        case .outageStarts: harness.wechat.failNext(10_000_000)
        case .outageEnds: harness.wechat.failNext(0)
        case .paid(let index):
            harness.wechat.hold(orderId: purchases[index].orderId, state: "SUCCESS", transactionId: purchases[index].transactionId)
        case .receipt(let index):
            // The app lived: the backend reports the payment with WeChat Pay's transaction id, unverified.
            _ = try await harness.database.ledger.record(orderId: purchases[index].orderId, events: [
                Submission(eventId: UUID(), type: "receipt.received", data: ["transactionId": .string(purchases[index].transactionId)]),
            ], metadata: EventMetadata(actor: "checkout-service"))
        case .notified(let index):
            // WeChat Pay's notification, signed and encrypted, verified and recorded as its endpoint does.
            var resource = ProviderTestKit.wechatPaymentResource()
            resource["out_trade_no"] = purchases[index].orderId
            resource["transaction_id"] = purchases[index].transactionId
            let body = try ProviderTestKit.wechatBody(resource: resource, id: "EV-\(purchases[index].orderId)")
            let headers = try ProviderTestKit.wechatHeaders(body: body, timestamp: Date())
            let notification = try ProviderTestKit.wechatVerifier().verify(headers: headers, body: body, now: Date())
            _ = try await harness.database.ledger.recordProviderMessage(notification.message(headers: headers, receivedAt: Date()))
        }
    }
}

extension SeededRandom {
    /// A number in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
