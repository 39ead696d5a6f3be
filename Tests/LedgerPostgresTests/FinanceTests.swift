import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// Records one lifecycle's events through the ledger, stopping after `steps` of them.
private func record(_ orderId: String, _ lifecycle: Lifecycle, steps: Int, on ledger: Ledger) async throws {
    for event in lifecycle.happyPath.prefix(steps) {
        _ = try await ledger.record(orderId: orderId, events: [event], metadata: EventMetadata(actor: "test-suite"))
    }
}

/// Moves a projection's times, as if the events had been recorded then. Revenue is served from these indexed
/// projection columns; the events themselves stay untouched (and append-only).
private func setProjection(_ client: SessionPool, _ orderId: String, _ column: String, _ time: String) async throws {
    try await client.query("UPDATE orders SET \(unescaped: column) = \(time)::timestamptz WHERE order_id = \(orderId)")
}

@Suite("Finance: revenue, reconciliation, anomalies")
struct FinanceTests {
    @Test func revenueIsPerCurrencyPerDayInTheGivenTimeZoneAndARefundCountsInItsOwnPeriod() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let usd = Lifecycle()
            var cny = Lifecycle(), late = Lifecycle()
            cny.amount = Money(value: 3000, currency: "CNY")
            late.amount = Money(value: 999, currency: "USD")
            try await record("usd", usd, steps: 6, on: ledger)
            try await record("cny", cny, steps: 6, on: ledger)
            try await record("late", late, steps: 6, on: ledger)
            _ = try await ledger.record(orderId: "late", events: [late.refunded], metadata: EventMetadata(actor: "t"))
            // 2026-10-31 20:30 UTC is already 2026-11-01 in Shanghai.
            try await setProjection(client, "usd", "granted_at", "2026-10-31T20:30:00Z")
            try await setProjection(client, "cny", "granted_at", "2026-11-02T10:00:00Z")
            try await setProjection(client, "late", "granted_at", "2026-11-03T10:00:00Z")
            try await setProjection(client, "late", "refunded_at", "2026-12-05T10:00:00Z")
            let report = RevenueReport(client: client)

            let utc = try await report.rows(from: "2026-11-01", to: "2026-11-30", groupBy: [.day, .currency], timeZone: "UTC")
            #expect(utc.map { [$0.group[.day] ?? "none", $0.currency, "\($0.grantedAmount)", "\($0.netAmount)"] }
                == [["2026-11-02", "CNY", "3000", "3000"], ["2026-11-03", "USD", "999", "999"]])
            let shanghai = try await report.rows(from: "2026-11-01", to: "2026-11-30", groupBy: [.currency], timeZone: "Asia/Shanghai")
            #expect(shanghai.map { [$0.currency, "\($0.grantedCount)", "\($0.grantedAmount)"] }
                == [["CNY", "1", "3000"], ["USD", "2", "1498"]], "never summed across currencies; the 20:30 UTC grant is in November in Shanghai")
            let december = try await report.rows(from: "2026-12-01", to: "2026-12-31", groupBy: [.product], timeZone: "UTC")
            #expect(december.count == 1)
            #expect(december.first.map { [$0.grantedCount, $0.refundedCount, $0.refundedAmount, $0.netAmount] } == [0, 1, 999, -999])
            await #expect(throws: FinanceError.unknownTimeZone("Mars/Olympus")) {
                try await report.rows(from: "2026-11-01", to: "2026-11-30", groupBy: [], timeZone: "Mars/Olympus")
            }
        }
    }

    @Test func reconciliationProducesEveryClassOfRowWithLineNumbers() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            var lifecycles: [String: Lifecycle] = [:]
            for name in ["matched", "amount", "product", "refundedThere", "notGranted", "absentThere"] {
                var lifecycle = Lifecycle()
                lifecycle.transactionId = "tx-" + name
                lifecycles[name] = lifecycle
                try await record(name, lifecycle, steps: name == "notGranted" ? 4 : 6, on: ledger)
            }
            let today = String(RFC3339.format(Date()).prefix(10))
            let csv = """
                transaction_id,product_id,amount_minor,currency,status,occurred_at,extra
                tx-matched,gems.100,499,USD,paid,2026-11-02T10:00:00Z,x
                tx-amount,gems.100,500,USD,paid,2026-11-02T10:00:00Z,x
                tx-product,gems.500,499,USD,paid,2026-11-02T10:00:00Z,x
                tx-refundedThere,gems.100,499,USD,paid,2026-11-02T10:00:00Z,x
                tx-refundedThere,gems.100,499,USD,refunded,2026-11-03T10:00:00Z,x
                tx-notGranted,gems.100,499,USD,paid,2026-11-02T10:00:00Z,x
                tx-unknown,gems.100,499,USD,paid,2026-11-02T10:00:00Z,x
                tx-bad,gems.100,4.99,USD,paid,2026-11-02T10:00:00Z,x
                "tx-quoted",gems.100,499,usd,paid,2026-11-02T10:00:00Z,x

                """
            let rows = RowSink()
            let summary = try await Reconciliation(client: client).run(
                provider: .appStore, from: .day(today), to: .day(today), chunks: [Array(csv.utf8)].async) { rows.add($0) }
            let results = rows.all.map { "\($0.line.map(String.init) ?? "-") \($0.transactionId ?? "") \($0.result.rawValue)" }
            #expect(results == [
                "2 tx-matched matched", "3 tx-amount amount_mismatch", "4 tx-product product_mismatch",
                "6 tx-refundedThere status_mismatch", "7 tx-notGranted missing_in_ledger", "8 tx-unknown missing_in_ledger",
                "9 tx-bad malformed", "10 tx-quoted malformed", "- tx-absentThere missing_at_provider",
            ])
            #expect(rows.all.first { $0.transactionId == "tx-notGranted" }?.ledger?.state == .verified, "names the lost order's state")
            #expect(rows.all.first { $0.line == 9 }?.problem?.contains("amount_minor") == true)
            #expect(rows.all.first { $0.line == 10 }?.problem?.contains("currency") == true)
            #expect(summary.counts[.missingInLedger] == 2 && summary.amounts[.missingInLedger] == ["USD": 998])
            #expect(!summary.allMatched)
        }
    }

    @Test func aFileWithoutTheRequiredColumnsIsRefusedNamingThem() async throws {
        _ = try await TestDatabase.withClient { client in
            await #expect(throws: ProviderFileError.missingColumns(["status", "occurred_at"])) {
                try await Reconciliation(client: client).run(
                    provider: .appStore, from: "2026-11-01", to: "2026-11-30",
                    chunks: [Array("transaction_id,product_id,amount_minor,currency\n".utf8)].async) { _ in }
            }
        }
    }

    @Test func everyAnomalyKindIsFoundAndYoungCasesWaitForTheirThreshold() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let meta = EventMetadata(actor: "checkout")
            try await record("stuck", Lifecycle(), steps: 2, on: ledger)
            try await record("lost", Lifecycle(), steps: 4, on: ledger)
            try await record("unfinished", Lifecycle(), steps: 5, on: ledger)
            let early = Lifecycle()
            try await record("early", early, steps: 3, on: ledger)
            _ = try await ledger.record(orderId: "early", events: [early.finished], metadata: meta)
            let late = Lifecycle()
            try await record("late", late, steps: 1, on: ledger)
            _ = try await ledger.record(orderId: "late", events: [late.cancelled, late.receipt], metadata: meta)
            let refundFirst = Lifecycle()
            try await record("refundFirst", refundFirst, steps: 4, on: ledger)
            _ = try await ledger.record(orderId: "refundFirst", events: [refundFirst.refunded], metadata: meta)
            let wrong = Lifecycle()
            try await record("wrong", wrong, steps: 4, on: ledger)
            await #expect(throws: Refusal.self) {
                try await ledger.record(orderId: "wrong", events: [wrong.granted(to: "acct-thief")], metadata: meta)
            }

            let finder = AnomalyFinder(client: client)
            let all = try await finder.find(olderThan: .zero)
            let found = Set(all.map { "\($0.kind.rawValue) \($0.orderId)" })
            for expected in ["stuck_payment stuck", "lost_order lost", "not_finished unfinished", "finished_before_grant early",
                             "late_receipt late", "refunded_before_grant refundFirst", "refused_grant wrong"] {
                #expect(found.contains(expected), "\(expected) in \(found)")
            }
            let refused = try #require(all.first { $0.kind == .refusedGrant })
            #expect(refused.detail.contains("account_mismatch") && refused.detail.contains("checkout"))
            #expect(try await EventStore(client: client).count("orders WHERE order_id = 'wrong' AND state = 'verified'") == 1, "the refusal wrote nothing")

            let young = Set(try await finder.find().map(\.kind))
            #expect(young.isDisjoint(with: [.lostOrder, .notFinished, .stuckPayment]), "default thresholds: 10m, 1h, 24h")
            #expect(young.isSuperset(of: [.finishedBeforeGrant, .lateReceipt, .refundedBeforeGrant, .refusedGrant]))
        }
    }
}

/// Rows collected from a reconciliation's callback.
final class RowSink: @unchecked Sendable {
    private let lock = NSLock()
    private var rows: [ReconciliationRow] = []
    func add(_ row: ReconciliationRow) { lock.withLock { rows.append(row) } }
    var all: [ReconciliationRow] { lock.withLock { rows } }
}

extension Array where Element == [UInt8] {
    /// The chunks as the async sequence `Reconciliation.run` reads.
    var async: AsyncStream<[UInt8]> {
        let chunks = self
        return AsyncStream { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        }
    }
}
