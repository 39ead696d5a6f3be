import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
import Synchronization
import Testing

/// Webhooks as `serve` sends them, set up with `ledger webhooks add`, through a `kill -9` of the node sending.
@Suite("CLI: webhooks from serve survive a kill -9")
struct WebhookServeTests {
    /// The node sending is killed while its receiver answers the 30th delivery; another node takes the endpoint over
    /// once the dead node's leases run out, and sends what was not acknowledged — again, with the same ids. Nothing is
    /// lost, each stream's events are acknowledged in order, and the ledger verifies.
    @Test func aNodeKilledMidDeliveryLosesNoEvent() async throws {
        let victim = Mutex<RunningServer?>(nil)
        let receipts = Mutex(0)
        let receiver = WebhookReceiver { _ in
            try? await Task.sleep(for: .milliseconds(10))
            if receipts.withLock({ $0 += 1; return $0 == 30 }) { victim.withLock { $0 }?.killAbruptly() }
            return (.noContent, nil)
        }
        try await TestDatabase.withURL { url, client in
            let serviceURL = url.replacingOccurrences(of: "postgres://postgres@", with: "postgres://ledger_service@")
            try await receiver.run { hookURL in
                let add = try await LedgerBinary.run(
                    ["webhooks", "add", "--name", "backend", "--url", hookURL, "--events", "order.*"], databaseURL: url)
                #expect(add.status == 0, "\(add.stderr)")
                let secret = add.stdout.trimmingCharacters(in: .newlines)
                #expect(WebhookSecret(secret) != nil, "the secret alone on stdout")
                try await recordHappyOrders(20, on: Ledger(client: client))

                let arguments = ["--webhook-allow-hosts", "127.0.0.1", "--webhook-interval", "100", "--webhook-timeout", "2"]
                let first = try await RunningServer.start(databaseURL: serviceURL, arguments: arguments)
                defer { first.stop() }
                victim.withLock { $0 = first }
                #expect(await eventually(within: .seconds(120)) { receipts.withLock { $0 } >= 30 })
                let killedAt = ContinuousClock.now
                let second = try await RunningServer.start(databaseURL: serviceURL, arguments: arguments)
                defer { second.stop() }
                try await recordHappyOrders(1, prefix: "after", on: Ledger(client: client))
                #expect(await eventually(within: .seconds(180)) { Set(receiver.all.map(\.id)).count == 126 })
                let tookOver = ContinuousClock.now - killedAt

                let all = receiver.all
                #expect(all.allSatisfy { isSignedByLedger(body: $0.body, id: $0.id, timestamp: $0.timestamp, signatures: $0.signatures, secret: secret) })
                var firstAcknowledged: [String: [Int64]] = [:], seen: Set<String> = []
                for delivery in all where seen.insert(delivery.id).inserted {
                    if let stream = delivery.streamId, let version = delivery.version { firstAcknowledged[stream, default: []].append(version) }
                }
                #expect(firstAcknowledged.count == 21 && firstAcknowledged.values.allSatisfy { $0 == [1, 2, 3, 4, 5, 6] })
                let duplicates = all.count - seen.count
                print("webhooks, kill -9 mid-delivery: 126 events, \(all.count) deliveries received, \(duplicates) sent again with the same id, all acknowledged \(tookOver) after the kill (the dead node's leases run out first)")

                let listed = try await LedgerBinary.run(["webhooks", "list", "--json"], databaseURL: url)
                let endpoint = try JSONValue(parsing: Array(listed.stdout.utf8))["webhooks"]
                #expect(listed.stdout.contains(#""pending":0"#), "\(String(describing: endpoint))")
                #expect(!listed.stdout.contains(secret.dropFirst(6)), "no secret in a listing")
                let verify = try await LedgerBinary.run(["verify"], databaseURL: url)
                #expect(verify.status == 0 && verify.stdout.hasSuffix("PASSED\n"), "\(verify.stdout)\(verify.stderr)")
            }
        }
    }
}
