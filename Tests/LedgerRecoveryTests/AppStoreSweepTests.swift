import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerProviderClients
import LedgerProviders
import LedgerRecovery
import LedgerTestSupport
import Logging
import ProviderTestSupport
import Synchronization
import Testing

@Suite("Recovery: sweeping Apple's notification history for what never arrived")
struct AppStoreSweepTests {
    /// The lost App Store order: created with its appAccountToken, payment queued, then the app died — no receipt, no
    /// transaction id — and Apple's ONE_TIME_CHARGE notification failed to arrive. Only the notification history
    /// holds it: the sweep finds it, verifies it, and records it as a delivered notification would be, once.
    @Test func aFailedNotificationOfAnOrderKnownOnlyByItsTokenIsRecordedOnce() async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()
        let now = Date()
        // Three notifications, across two of the stand-in's pages: the lost order's, one for an order this ledger
        // does not have, and one signed by a CA the ledger does not trust (naming an order it does have).
        let lost = try messages.notification("ONE_TIME_CHARGE", orderId: "as-1", transactionId: "2000000000000701")
        apple.holdNotification(lost, sentAt: now.addingTimeInterval(-1_800))
        apple.holdNotification(try messages.notification("ONE_TIME_CHARGE", orderId: "elsewhere", transactionId: "2000000000000702"),
                               sentAt: now.addingTimeInterval(-1_200))
        let forged = try messages.notification(
            "ONE_TIME_CHARGE", orderId: "as-2", transactionId: "2000000000000703", by: try ProviderTestKit.CA(name: "Untrusted"))
        apple.holdNotification(forged, sentAt: now.addingTimeInterval(-600))
        let logs = CapturedLogs()

        try await TestDatabase.withOwnerAndService { _, service in
            try await apple.run { base in
                let database = LedgerDatabase(client: service)
                try await Self.queuedOrder("as-1", on: database)
                try await Self.queuedOrder("as-2", on: database)
                let sweep = AppStoreNotificationSweep(
                    api: AppStoreServerAPI(
                        key: AppStoreServerAPIKey(keyId: apple.expected.keyId, issuerId: apple.expected.issuerId,
                                                  bundleId: apple.expected.bundleId, privateKey: apple.key),
                        productionURL: base + "/production", sandboxURL: base + "/sandbox"),
                    verifier: ProviderTestKit.verifier(trusting: messages.ca), database: database, clock: { now },
                    logger: logs.logger)

                var expected = SweepReport()
                (expected.recorded, expected.unmatched, expected.unverified, expected.pages) = (1, 1, 1, 2)
                #expect(try await sweep.sweep(from: now.addingTimeInterval(-3_600), to: now) == expected)

                #expect(try await database.ledger.order("as-1")?.state == .verified)
                let history = try #require(try await database.ledger.history("as-1"))
                #expect(history.entries.map(\.event.type) == [
                    "order.created", "payment.queued", "provider.notified", "receipt.received", "receipt.verified",
                ])
                let fact = try #require(history.entries.first { $0.event.type == "provider.notified" }?.event)
                #expect(fact.metadata["actor"] == "provider:app_store" && fact.data["evidence"]?["signedPayload"] == .string(lost))
                #expect(fact.data["transactionId"] == "2000000000000701")
                // The forged one named as-2: nothing of it was recorded, and it was said as a security event.
                #expect(try await database.ledger.history("as-2")?.entries.map(\.event.type) == ["order.created", "payment.queued"])
                #expect(logs.messages.filter { $0.hasPrefix("security: ") }.count == 1, "\(logs.messages)")

                // A second sweep asks again and records nothing new.
                let events = try await database.ledger.store.count("events")
                (expected.recorded, expected.duplicate, expected.unmatched) = (0, 2, 0)
                #expect(try await sweep.sweep(from: now.addingTimeInterval(-3_600), to: now) == expected)
                #expect(try await database.ledger.store.count("events") == events)
                #expect(try await database.operations.verify().passed)
            }
        }
        #expect(apple.requests.count == 4 && apple.requests.allSatisfy { $0.hasPrefix("production 200 ") }, "\(apple.requests)")
    }

    /// The schedule sweeps by itself: its first round sweeps the last four days, later rounds sweep only once
    /// `sweepEvery` has passed, from a little before where the last sweep ended — and one node at a time.
    @Test func theScheduleSweepsAppleHistoryByItselfEveryInterval() async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()
        let clock = TestClock()
        let start = clock.now
        apple.holdNotification(try messages.notification("ONE_TIME_CHARGE", orderId: "as-1", transactionId: "2000000000000801"),
                               sentAt: start.addingTimeInterval(-3 * 86_400))
        try await TestDatabase.withOwnerAndService { _, service in
            try await apple.run { base in
                let database = LedgerDatabase(client: service)
                try await Self.queuedOrder("as-1", on: database)
                let api = AppStoreServerAPI(
                    key: AppStoreServerAPIKey(keyId: apple.expected.keyId, issuerId: apple.expected.issuerId,
                                              bundleId: apple.expected.bundleId, privateKey: apple.key),
                    productionURL: base + "/production", sandboxURL: base + "/sandbox")
                let questions = ProviderQuestions(
                    clients: ProviderClients(appStore: api),
                    verifiers: ProviderVerifiers(appStore: ProviderTestKit.verifier(trusting: messages.ca)), logger: RecoveryHarness.logger)
                let nodes = (0..<2).map { _ in
                    Recoverer(database: database, questions: questions, clock: clock.read, logger: RecoveryHarness.logger)
                }
                // Two nodes at once: one sweeps, the other finds the sweep taken.
                async let first = nodes[0].sweepIfDue()
                async let second = nodes[1].sweepIfDue()
                let reports = try await [first, second].flatMap { $0.filter { $0.key == .production }.values }
                #expect(reports.map(\.recorded) == [1], "\(reports)")
                #expect(try await database.ledger.order("as-1")?.state == .verified)

                clock.advance(.seconds(599))
                _ = try await nodes[0].runRound()
                #expect(apple.notificationRequests(in: "production").count == 1, "not due yet")
                clock.advance(.seconds(1))
                _ = try await nodes[1].runRound()
                #expect(apple.notificationRequests(in: "production").count == 2)
                let windows = apple.notificationRequests(in: "production").map { ($0["startDate"], $0["endDate"]) }
                let milliseconds = { (date: Date) in JSONValue.int(Int64(date.timeIntervalSince1970 * 1000)) }
                #expect(windows.first?.0 == milliseconds(start.addingTimeInterval(-4 * 86_400 - 300)))
                #expect(windows.last?.0 == milliseconds(start.addingTimeInterval(-300)) && windows.last?.1 == milliseconds(clock.now))
                #expect(try await database.operations.verify().passed)
            }
        }
    }

    /// An App Store order of 4.99 USD with the appAccountToken derived from its id, its payment queued: what the app
    /// records before StoreKit's purchase sheet, and nothing after.
    static func queuedOrder(_ orderId: String, on database: LedgerDatabase) async throws {
        _ = try await database.ledger.record(orderId: orderId, events: [
            Submission(eventId: UUID(), type: "order.created", data: [
                "accountId": "acct-1", "productId": "gems.100", "amount": ["value": 499, "currency": "USD"], "provider": "app_store",
                "appAccountToken": .string(AppAccountToken.forOrderId(orderId).uuidString.lowercased()),
            ]),
            Submission(eventId: UUID(), type: "payment.queued", data: [:]),
        ], metadata: EventMetadata(actor: "test-suite"))
    }
}

/// The messages logged through `logger`, for a test to read.
final class CapturedLogs: Sendable {
    private let captured = Mutex<[String]>([])

    var messages: [String] { captured.withLock { $0 } }

    var logger: Logger {
        Logger(label: "sweep-tests") { _ in Handler(logs: self) }
    }

    func append(_ message: String) { captured.withLock { $0.append(message) } }

    struct Handler: LogHandler {
        let logs: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            logs.append(event.message.description)
        }
    }
}
