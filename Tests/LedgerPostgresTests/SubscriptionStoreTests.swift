import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// Subscriptions in the store (schema/023): the second kind of stream, appended through the same append as orders,
/// with its projections written in the same statement, checked by `ledger verify` and rebuilt by `ledger rebuild`.
@Suite("Subscriptions in the store: signed facts recorded once, in any order, owned by their order's account")
struct SubscriptionStoreTests {
    static func record(_ event: SubscriptionEvent, to id: String = SubscriptionYear.id, on ledger: Ledger) async throws
        -> SubscriptionMessageOutcome
    {
        guard case .provider(_, let said) = event, let notificationId = said.notificationId else {
            throw CorruptRow(column: "notificationId", value: "none")  // every notification of the year has one
        }
        return try await ledger.recordSubscriptionNotification(
            id, event: event, notificationId: notificationId, provider: .appStore, requestId: nil)
    }

    /// Apple signs times in milliseconds; the fold reads them back from the events' JSON, the check from PostgreSQL:
    /// the same microsecond read each way is one time, and `ledger verify` finds no drift (it once did, in a `Date`'s
    /// last bit, for about one time in five).
    @Test func timesToTheMillisecondVerify() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            var random = SeededRandom(seed: 7)
            for index in 0..<30 {
                let milliseconds = 1_795_000_000_000 + Int64(index) * 2_592_000_000 + Int64(random.next() % 1000)
                let purchased = Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
                let ends = Date(timeIntervalSince1970: TimeInterval(milliseconds + 2_592_000_000 - 7) / 1000)
                let transaction = SubscriptionYear.transaction("ms\(index)", from: purchased, to: ends)
                let event = SubscriptionYear.notification("DID_RENEW", signedAt: transaction.signedAt, transaction: transaction)
                _ = try await Self.record(event, on: database.ledger)
            }
            let report = try await database.operations.verify()
            #expect(report.passed, "\(report.drift)")
        }
    }

    /// A year of notifications delivered by 16 concurrent deliveries, shuffled, three of them twice: one event per
    /// notification, the state and entitlement of the in-order fold, `ledger verify` passes, and a rebuild gives
    /// the same rows back.
    @Test func sixteenConcurrentDeliveriesInAnyOrderEndInTheInOrderStateAndVerify() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            let ledger = database.ledger
            var random = SeededRandom(seed: 44)
            var deliveries = SubscriptionYear.notifications + SubscriptionYear.notifications.prefix(3)
            deliveries.shuffle(using: &random)
            #expect(deliveries.count == 16)
            try await withThrowingTaskGroup(of: SubscriptionMessageOutcome.self) { group in
                for event in deliveries { group.addTask { try await Self.record(event, on: ledger) } }
                for try await outcome in group {
                    switch outcome {
                    case .recorded, .duplicate: break
                    case .refused: Issue.record("\(outcome)")
                    }
                }
            }
            let stored = try #require(try await ledger.subscription(SubscriptionYear.id))
            let expected = try #require(SubscriptionYear.fold(SubscriptionYear.notifications))
            #expect(stored.version == SubscriptionYear.notifications.count)
            #expect(stored.transactions == expected.transactions)
            #expect(stored.renewalInfos == expected.renewalInfos)
            #expect(stored.notificationIds == expected.notificationIds)
            for row in SubscriptionYear.table {
                #expect(stored.entitlement(at: row.moment) == expected.entitlement(at: row.moment))
            }

            let report = try await database.operations.verify()
            #expect(report.passed, "\(report.drift) \(report.brokenEvents)")
            #expect(report.subscriptionsChecked == 1)
            let rebuilt = try await database.operations.rebuild(pageSize: 1_000)
            #expect(rebuilt.subscriptions == 1)
            #expect(try await ledger.subscription(SubscriptionYear.id) == stored)
            #expect(try await database.operations.verify().passed)
        }
    }

    /// The first purchase's order owns the subscription (its account, linked once); a transaction another
    /// subscription holds is refused; a changed projection row is found by `ledger verify`.
    @Test func theFirstPurchaseLinksItsOrdersAccountAndATransactionHeldElsewhereIsRefused() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            let ledger = database.ledger
            var lifecycle = Lifecycle()
            lifecycle.accountId = "alice"
            lifecycle.transactionId = "t01"
            let metadata = EventMetadata(actor: "test")
            for event in [lifecycle.created, lifecycle.receipt] {
                _ = try await ledger.record(orderId: "order-sub", events: [event], metadata: metadata)
            }
            let first = try await Self.record(SubscriptionYear.notifications[0], on: ledger)
            #expect(first == .recorded(subscriptionId: SubscriptionYear.id, version: 2))
            let owned = try #require(try await ledger.subscription(SubscriptionYear.id))
            #expect(owned.accountId == "alice" && owned.orderId == "order-sub")
            #expect(try await ledger.subscriptions(ofAccount: "alice").map(\.subscriptionId) == [SubscriptionYear.id])
            #expect(try await ledger.subscriptions(ofAccount: "bob").isEmpty)
            // Delivered again: a replay, and the link is not made twice.
            #expect(try await Self.record(SubscriptionYear.notifications[0], on: ledger) == .duplicate(subscriptionId: SubscriptionYear.id))
            #expect(try await ledger.subscription(SubscriptionYear.id)?.version == 2)

            _ = try await Self.record(SubscriptionYear.notifications[1], on: ledger)
            var stolen = SubscriptionYear.transaction("t02", from: SubscriptionYear.day(2, 1), to: SubscriptionYear.day(3, 1))
            stolen.originalTransactionId = "2000000999"
            let theft = SubscriptionEvent.provider(
                .renewed, ProviderSaid(notificationId: "n-theft", signedAt: stolen.signedAt, transaction: stolen))
            guard case .refused(_, let code, _) = try await Self.record(theft, to: "2000000999", on: ledger) else {
                Issue.record("a transaction held by another subscription was recorded")
                return
            }
            #expect(code == "transaction_bound_elsewhere")
            #expect(try await ledger.subscription("2000000999") == nil)
            #expect(try await database.operations.verify().passed)

            try await tamper(client, ["UPDATE subscriptions SET account_id = 'mallory', order_id = 'order-x'"])
            let tampered = try await database.operations.verify()
            #expect(tampered.drift.map(\.field).sorted() == ["accountId", "orderId"], "\(tampered.drift)")
        }
    }
}

/// `Finance.subscriptions` over the year of `SubscriptionYear`, checked against what was worked out by hand from its
/// story: monthly at 4.99 USD, the April renewal late (billing recovered on 10 April), the upgrade to 9.99 USD on
/// 1 July beside the June period that runs to 10 July, November's period refunded half on 15 November.
@Suite("Finance: subscriptions per day — active, MRR, renewals, refunds, churn")
struct SubscriptionReportTests {
    typealias Row = SubscriptionReportRow

    static func row(
        _ day: String, _ product: String, active: Int64, mrr: Int64, started: Int64 = 0, renewed: Int64 = 0,
        revenue: Int64 = 0, refunds: Int64 = 0, refunded: Int64 = 0, churnedOther: Int64 = 0
    ) -> Row {
        Row(day: day, productId: product, currency: "USD", active: active, mrr: mrr, started: started, renewed: renewed,
            revenue: revenue, refunds: refunds, refunded: refunded, churnedVoluntary: 0, churnedBilling: 0,
            churnedOther: churnedOther)
    }

    static func report(_ finance: Finance, _ from: String, _ to: String, timeZone: String = "UTC") async throws -> [Row] {
        try await finance.subscriptions(from: try #require(PeriodBound(from)), to: try #require(PeriodBound(to)), timeZone: timeZone)
    }

    @Test func theYearReportsWhatItsStorySays() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            for event in SubscriptionYear.notifications { _ = try await SubscriptionStoreTests.record(event, on: database.ledger) }
            // Not revenue: a family member's period, a sandbox one, a price not in whole minor units.
            var family = SubscriptionYear.transaction("f01", from: SubscriptionYear.day(1, 1), to: SubscriptionYear.day(2, 1), familyShared: true)
            family.originalTransactionId = "2000000200"
            var sandbox = SubscriptionYear.transaction("s01", from: SubscriptionYear.day(1, 1), to: SubscriptionYear.day(2, 1))
            sandbox.originalTransactionId = "2000000300"
            sandbox.environment = .sandbox
            var odd = SubscriptionYear.transaction("o01", from: SubscriptionYear.day(1, 1), to: SubscriptionYear.day(2, 1))
            odd.originalTransactionId = "2000000400"
            odd.price = nil
            odd.unconvertedPrice = UnconvertedPrice(milliunits: 4_995, quantity: 1, currency: "USD")
            for (hour, transaction) in [family, sandbox, odd].enumerated() {
                let signedAt = SubscriptionYear.day(1, 1, hour + 2)  // each its own notification
                let event = SubscriptionYear.notification("SUBSCRIBED", signedAt: signedAt, transaction: transaction)
                _ = try await SubscriptionStoreTests.record(event, to: transaction.originalTransactionId, on: database.ledger)
            }
            let finance = database.finance

            #expect(try await Self.report(finance, "2026-01-01", "2026-01-02") == [
                Self.row("2026-01-01", "pro.monthly", active: 1, mrr: 499, started: 1, revenue: 499),
                Self.row("2026-01-02", "pro.monthly", active: 1, mrr: 499),
            ])
            // Renewed on 1 February; lapsed from 1 April (nothing to say), recovered on 10 April.
            #expect(try await Self.report(finance, "2026-02-01", "2026-02-01") == [
                Self.row("2026-02-01", "pro.monthly", active: 1, mrr: 499, renewed: 1, revenue: 499),
            ])
            #expect(try await Self.report(finance, "2026-04-01", "2026-04-10") == [
                Self.row("2026-04-10", "pro.monthly", active: 1, mrr: 499, renewed: 1, revenue: 499),
            ])
            #expect(try await Self.report(finance, "2026-07-01", "2026-07-01") == [
                Self.row("2026-07-01", "pro.monthly", active: 1, mrr: 499),
                Self.row("2026-07-01", "pro.premium", active: 1, mrr: 999, renewed: 1, revenue: 999),
            ])
            // Half of 9.99 refunded (499.5, rounded half up); access ended then, and nothing came after it.
            #expect(try await Self.report(finance, "2026-11-14", "2026-11-15") == [
                Self.row("2026-11-14", "pro.premium", active: 1, mrr: 999),
                Self.row("2026-11-15", "pro.premium", active: 0, mrr: 0, refunds: 1, refunded: 500, churnedOther: 1),
            ])
            let year = try await Self.report(finance, "2026-01-01", "2026-12-31")
            #expect(year.reduce(0) { $0 + $1.renewed } == 10 && year.reduce(0) { $0 + $1.started } == 1)
            #expect(year.reduce(0) { $0 + $1.revenue } == 6 * 499 + 5 * 999)
            // A day in Tokyo begins nine hours before UTC's: 1 February 00:00 UTC is 09:00 there, the same day.
            #expect(try await Self.report(finance, "2026-02-01", "2026-02-01", timeZone: "Asia/Tokyo").first?.renewed == 1)
            await #expect(throws: FinanceError.unknownTimeZone("Mars/Olympus")) {
                try await Self.report(finance, "2026-02-01", "2026-02-01", timeZone: "Mars/Olympus")
            }
        }
    }
}

/// Claims and grants race on one subscription: 16 accounts claim it at once while nobody owns it, then 16 grants of
/// one period by its owner at once. One claim wins, every other is refused and listed; one grant is recorded, the rest
/// are replays or `already_granted`; `ledger verify` passes.
@Suite("Subscriptions in the store: concurrent claims and grants on one subscription")
struct ConcurrentClaimTests {
    @Test func sixteenClaimsMakeOneOwnerAndSixteenGrantsOneCredit() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            let ledger = database.ledger
            let first = SubscriptionYear.transaction("t01", from: SubscriptionYear.day(1, 1), to: SubscriptionYear.day(2, 1))
            let metadata = EventMetadata(actor: "race")
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for account in 0..<16 {
                    group.addTask {
                        do {
                            let outcome = try await ledger.claimSubscription(
                                SubscriptionYear.id, accountId: "acct-\(account)", transaction: first, policy: .keep,
                                metadata: metadata)
                            if case .claimed = outcome { return "claimed" }
                            return "other"
                        } catch let refusal as SubscriptionRefusal { return refusal.code }
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "claimed" }.count == 1, "\(outcomes)")
            #expect(outcomes.filter { $0 == "account_mismatch" }.count == 15, "\(outcomes)")
            let owner = try #require(try await ledger.subscription(SubscriptionYear.id)?.accountId)
            let refused = try await database.finance.anomalies(kinds: [.refusedClaim], olderThan: .zero, limit: 100)
            #expect(refused.anomalies.count == 15)

            let grants = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        do {
                            let recorded = try await ledger.grantSubscriptionPeriod(
                                SubscriptionYear.id, accountId: owner, transaction: first, metadata: metadata)
                            return recorded.append.isReplay ? "replay" : "granted"
                        } catch let refusal as SubscriptionRefusal { return refusal.code }
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(grants.filter { $0 == "granted" }.count == 1, "\(grants)")
            #expect(grants.allSatisfy { ["granted", "replay", "already_granted"].contains($0) }, "\(grants)")
            #expect(try await ledger.subscription(SubscriptionYear.id)?.grants.count == 1)
            let report = try await database.operations.verify()
            #expect(report.passed, "\(report.drift)")
        }
    }
}
