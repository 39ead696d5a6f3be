import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import LedgerRecovery
import LedgerTestSupport
import PostgresNIO
import ProviderTestSupport
import Testing

@Suite("Recovery: Apple's notification history swept through any number of pages, in each environment the app accepts")
struct AppStoreSweepPagesTests {
    /// After an outage of days, Apple's history of failed notifications holds more pages than one round reads (100).
    /// The sweep keeps its place (the window and the next page's token) after every page, so the next round — here
    /// on another node — goes on from page 101 and finds the lost order on the last page; each page is asked once,
    /// every one for the very window the first was, and once the window is read the sweep waits its interval.
    /// Before, every round began the window again at page 1, never reached page 101, and never found the order.
    @Test func aWindowOfMoreThanAHundredPagesIsReadOnOverRoundsEachPageOnce() async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()  // two notifications a page: 202 of them are 101 pages
        let clock = TestClock()
        let start = clock.now
        for index in 0..<201 {
            apple.holdNotification(
                try messages.notification("ONE_TIME_CHARGE", orderId: "elsewhere-\(index)", transactionId: "2000000000\(100_000 + index)"),
                sentAt: start.addingTimeInterval(-3 * 86_400 + Double(index) * 60))
        }
        let lost = try messages.notification("ONE_TIME_CHARGE", orderId: "as-1", transactionId: "2000000000999999")
        apple.holdNotification(lost, sentAt: start.addingTimeInterval(-3_600))

        try await TestDatabase.withOwnerAndService { _, service in
            try await apple.run { base in
                let database = LedgerDatabase(client: service)
                try await AppStoreSweepTests.queuedOrder("as-1", on: database)
                let questions = Self.questions(apple, base: base, messages: messages, environments: [.production])
                let nodes = (0..<2).map { _ in
                    Recoverer(database: database, questions: questions, clock: clock.read, logger: RecoveryHarness.logger)
                }

                let first = try #require(try await nodes[0].sweepIfDue()[.production])
                #expect(first.pages == AppStoreServerAPI.maximumPages && !first.complete && first.unmatched == 200, "\(first)")
                #expect(try await database.ledger.order("as-1")?.state == .paymentQueued)

                clock.advance(.seconds(15))
                let second = try #require(try await nodes[1].sweepIfDue()[.production], "a window half read is due at once")
                #expect(second.pages == 1 && second.complete && second.recorded == 1 && second.unmatched == 1, "\(second)")
                #expect(try await database.ledger.order("as-1")?.state == .verified)

                clock.advance(.seconds(15))
                #expect(try await nodes[0].sweepIfDue().isEmpty, "read to its end: due again sweepEvery after the window's end")

                let asked = apple.requests.filter { $0.contains("/notifications/history") }
                #expect(asked.count == 101 && Set(asked).count == 101 && asked.allSatisfy { $0.hasPrefix("production 200 ") }, "\(asked.suffix(3))")
                let windows = Set(apple.notificationRequests(in: "production").map(\.canonicalJSON))
                #expect(windows.count == 1, "every page asked for the first page's window: \(windows)")
                let row = try await Self.sweepRow("app_store:notification_history", on: service)
                #expect(Self.isSwept(row, to: start), "swept to the window's end, no place kept: \(row)")
                #expect(try await database.operations.verify().passed)
            }
        }
    }

    /// A page token Apple refuses (4000014: its tokens belong to one request, and need not last) would be refused
    /// every round: the sweep drops the half-read window and begins a new one from where the last finished window
    /// ended, reading its pages from the first; nothing recorded before is recorded twice.
    @Test func aRefusedPageTokenBeginsTheWindowAgain() async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()
        let clock = TestClock()
        let now = clock.now
        for index in 0..<4 {
            apple.holdNotification(
                try messages.notification("ONE_TIME_CHARGE", orderId: "elsewhere-\(index)", transactionId: "200000000000050\(index)"),
                sentAt: now.addingTimeInterval(-7_200 + Double(index)))
        }
        apple.holdNotification(try messages.notification("ONE_TIME_CHARGE", orderId: "as-1", transactionId: "2000000000000599"),
                               sentAt: now.addingTimeInterval(-3_600))
        try await TestDatabase.withOwnerAndService { _, service in
            try await apple.run { base in
                let database = LedgerDatabase(client: service)
                try await AppStoreSweepTests.queuedOrder("as-1", on: database)
                // As a round before left it: a window half read, and a token Apple no longer takes.
                let (sweptUntil, windowStart) = (now.addingTimeInterval(-86_400), now.addingTimeInterval(-86_700))
                _ = try await service.withConnection { connection in
                    try await connection.query("""
                        INSERT INTO recovery_sweeps (source, swept_until, window_start, window_end, page_token)
                        VALUES ('app_store:notification_history', \(sweptUntil), \(windowStart), \(now.addingTimeInterval(-60)), 'c3RhbGU=')
                        """, logger: RecoveryHarness.logger)
                }
                let node = Recoverer(
                    database: database, questions: Self.questions(apple, base: base, messages: messages, environments: [.production]),
                    clock: clock.read, logger: RecoveryHarness.logger)

                #expect(try await node.sweepIfDue().isEmpty, "the refused page records nothing")
                #expect(Self.isSwept(try await Self.sweepRow("app_store:notification_history", on: service), to: sweptUntil))
                let report = try #require(try await node.sweepIfDue()[.production], "due at once: swept_until is a day old")
                #expect(report.complete && report.pages == 3 && report.recorded == 1 && report.unmatched == 4, "\(report)")
                #expect(try await database.ledger.order("as-1")?.state == .verified)
                let asked = apple.requests.filter { $0.contains("/notifications/history") }
                #expect(asked.first == "production 400 /production/inApps/v1/notifications/history?paginationToken=c3RhbGU%3D", "\(asked)")
                #expect(asked.count == 4)
                let windows = apple.notificationRequests(in: "production").map { $0["startDate"] }
                let milliseconds = { (date: Date) in JSONValue.int(Int64((date.timeIntervalSince1970 * 1000).rounded(.down))) }
                #expect(windows.dropFirst().allSatisfy { $0 == milliseconds(sweptUntil.addingTimeInterval(-300)) }, "\(windows)")
            }
        }
    }

    /// A ledger that accepts Sandbox purchases (TestFlight, App Review) has Sandbox orders, lost like any other when
    /// Apple's notification fails: Sandbox's history is swept too, as a row of its own. One that accepts only
    /// Production never asks Sandbox.
    @Test func sandboxHistoryIsSweptWhenTheAppAcceptsSandbox() async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()
        let clock = TestClock()
        apple.holdNotification(
            try messages.notification("ONE_TIME_CHARGE", orderId: "sb-1", transactionId: "2000000000000901", environment: "Sandbox"),
            sentAt: clock.now.addingTimeInterval(-7_200), in: "sandbox")
        apple.holdNotification(
            try messages.notification("ONE_TIME_CHARGE", orderId: "pr-1", transactionId: "2000000000000902"),
            sentAt: clock.now.addingTimeInterval(-7_200))

        try await TestDatabase.withOwnerAndService { _, service in
            try await apple.run { base in
                let database = LedgerDatabase(client: service)
                try await Self.queuedOrder("sb-1", environment: "sandbox", on: database)
                try await Self.queuedOrder("pr-1", environment: "production", on: database)

                let productionOnly = Recoverer(
                    database: database, questions: Self.questions(apple, base: base, messages: messages, environments: [.production]),
                    clock: clock.read, logger: RecoveryHarness.logger)
                #expect(try await productionOnly.sweepIfDue().keys.sorted { $0.rawValue < $1.rawValue } == [.production])
                #expect(apple.notificationRequests(in: "sandbox").isEmpty)
                #expect(try await database.ledger.order("pr-1")?.state == .verified)
                #expect(try await database.ledger.order("sb-1")?.state == .paymentQueued)

                let both = Recoverer(
                    database: database,
                    questions: Self.questions(apple, base: base, messages: messages, environments: [.production, .sandbox]),
                    clock: clock.read, logger: RecoveryHarness.logger)
                let reports = try await both.sweepIfDue()
                #expect(reports[.production] == nil, "Production was swept a moment ago: not due")
                #expect(reports[.sandbox]?.recorded == 1, "\(reports)")
                #expect(try await database.ledger.order("sb-1")?.state == .verified)
                #expect(apple.notificationRequests(in: "sandbox").count == 1)
                #expect(Self.isSwept(try await Self.sweepRow("app_store:notification_history:sandbox", on: service), to: clock.now))
                #expect(try await database.operations.verify().passed)
            }
        }
    }

    /// A Server API client and a verifier for the stand-in at `base`, the app accepting `environments`.
    static func questions(
        _ apple: FakeAppStoreServerAPI, base: String, messages: AppleMessages, environments: Set<AppStoreEnvironment>
    ) -> ProviderQuestions {
        let api = AppStoreServerAPI(
            key: AppStoreServerAPIKey(keyId: apple.expected.keyId, issuerId: apple.expected.issuerId,
                                      bundleId: apple.expected.bundleId, privateKey: apple.key),
            productionURL: base + "/production", sandboxURL: base + "/sandbox")
        let app = AppStoreApp(bundleId: ProviderTestKit.bundleId, appAppleId: ProviderTestKit.appAppleId, environments: environments)
        return ProviderQuestions(
            clients: ProviderClients(appStore: api),
            verifiers: ProviderVerifiers(appStore: ProviderTestKit.verifier(trusting: messages.ca, apps: [app])),
            logger: RecoveryHarness.logger)
    }

    /// An App Store order of `environment`, known by its appAccountToken only, its payment queued.
    static func queuedOrder(_ orderId: String, environment: String, on database: LedgerDatabase) async throws {
        _ = try await database.ledger.record(orderId: orderId, events: [
            Submission(eventId: UUID(), type: "order.created", data: [
                "accountId": "acct-1", "productId": "gems.100", "amount": ["value": 499, "currency": "USD"], "provider": "app_store",
                "environment": .string(environment),
                "appAccountToken": .string(AppAccountToken.forOrderId(orderId).uuidString.lowercased()),
            ]),
            Submission(eventId: UUID(), type: "payment.queued", data: [:]),
        ], metadata: EventMetadata(actor: "test-suite"))
    }

    /// `swept_until` (to the microsecond, as PostgreSQL keeps it) and the page token of a sweep's row ("-" for none).
    /// Whether `row` (as `sweepRow` reads it) is swept up to `until`, with no place kept. PostgreSQL keeps whole
    /// microseconds, and a `Date` that went through Apple's milliseconds and back may land a microsecond either side.
    static func isSwept(_ row: String, to until: Date) -> Bool {
        let parts = row.split(separator: " ")
        guard parts.count == 2, parts[1] == "-", let stored = Int64(parts[0]) else { return false }
        return abs(stored - Timestamp.microseconds(until)) <= 1
    }

    static func sweepRow(_ source: String, on pool: SessionPool) async throws -> String {
        try await pool.withConnection { connection in
            var row = ""
            for try await (until, token) in try await connection.query(
                "SELECT swept_until, page_token FROM recovery_sweeps WHERE source = \(source)", logger: RecoveryHarness.logger
            ).decode((Date, String?).self) {
                row = "\(Timestamp.microseconds(until)) \(token ?? "-")"
            }
            return row
        }
    }
}
