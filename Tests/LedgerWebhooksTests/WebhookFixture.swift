import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
@testable import LedgerWebhooks
import Synchronization

/// A clock a test moves, and nothing else does: it starts an hour after the real time, so that every row the
/// database stamps with its own time during a test (a delivery queued) is due by it, and a retry's wait passes only
/// when the test says — however slowly a busy machine runs the test.
final class MovedClock: Sendable {
    private let time = Mutex(Date().addingTimeInterval(3_600))
    var now: Date { time.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
}

/// A fresh ledger, an endpoint pointed at a receiver, and a dispatcher for it.
struct WebhookFixture: Sendable {
    let database: LedgerDatabase
    let clock: MovedClock
    let receiver: WebhookReceiver
    let url: String
    let secret: WebhookSecret

    /// Loopback receivers are allowed (they are refused by default).
    static let loopback = WebhookAddressPolicy(allowedHosts: [], allowedRanges: IPAddressRange("127.0.0.0/8").map { [$0] } ?? [])

    static func run(
        selectors: [String] = ["*"], receiver: WebhookReceiver = WebhookReceiver(),
        _ body: @Sendable @escaping (WebhookFixture) async throws -> Void
    ) async throws {
        try await TestDatabase.withClient { client in
            try await receiver.run { url in
                let database = LedgerDatabase(client: client)
                let clock = MovedClock()
                let secret = try await database.webhooks.add(
                    name: "backend", url: try WebhookEndpointURL(url), selectors: selectors.compactMap(WebhookEventSelector.init))
                try await body(WebhookFixture(database: database, clock: clock, receiver: receiver, url: url, secret: secret))
            }
        }
    }

    /// A dispatcher on the test's clock (`realTime`: on the real one, for a receiver that checks a delivery's time).
    func dispatcher(
        node: String = "node-a", realTime: Bool = false, _ configure: (inout WebhookDispatcher.Settings) -> Void = { _ in }
    ) -> WebhookDispatcher {
        var settings = WebhookDispatcher.Settings()
        settings.policy = Self.loopback
        settings.timeout = .seconds(30)
        configure(&settings)
        let clock = clock
        if realTime { return WebhookDispatcher(database: database, settings: settings, node: node) }
        return WebhookDispatcher(database: database, settings: settings, node: node, now: { clock.now })
    }

    /// Queues every event the feed holds (`expected` of them) for the endpoints.
    func queue(_ expected: Int) async throws {
        _ = try await database.consumers.drain(database.webhooks.queueing, expected: expected)
    }

    /// Rounds of `dispatcher` until nothing is due now.
    @discardableResult
    func deliverAll(_ dispatcher: WebhookDispatcher) async throws -> Int {
        var attempts = 0
        while true {
            let made = try await dispatcher.deliverDue()
            if made == 0 { return attempts }
            attempts += made
        }
    }

    func verified(_ delivery: WebhookReceiver.Received, secret: WebhookSecret? = nil) -> Bool {
        isSignedByLedger(
            body: delivery.body, id: delivery.id, timestamp: delivery.timestamp, signatures: delivery.signatures,
            secret: (secret ?? self.secret).text, now: clock.now)
    }
}
