import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
import Testing

@Suite("CLI: verify --signatures re-verifies every stored App Store JWS against the configured roots")
struct ProviderCommandTests {
    @Test func storedSignaturesVerifyAgainstTheirRootAndFailAgainstAnother() async throws {
        let apple = try AppleMessages()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("providers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let trusted = try apple.configurationFile(in: directory)
        let otherDirectory = directory.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: otherDirectory, withIntermediateDirectories: true)
        let untrusted = try AppleMessages().configurationFile(in: otherDirectory)

        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            _ = try await ledger.record(orderId: "order-1", events: [Submission(
                eventId: UUID(), type: "order.created",
                data: ["accountId": "acct-1", "productId": "gems.100", "amount": ["value": 499, "currency": "USD"], "provider": "app_store"])],
                metadata: EventMetadata(actor: "test-suite"))
            let verifier = try #require(apple.verifiers.appStore)
            for (orderId, transactionId) in [("order-1", "2000000000000001"), ("nobody", "2000000000000999")] {
                let jws = try apple.notification("ONE_TIME_CHARGE", orderId: orderId, transactionId: transactionId)
                let notification = try await verifier.verifyNotification(jws, now: Date())
                _ = try await ledger.recordProviderMessage(try #require(notification.message))
            }

            let passed = try await LedgerBinary.run(["verify", "--signatures", "--providers-config", trusted.path], databaseURL: url)
            #expect(passed.status == 0, "\(passed.stdout)\(passed.stderr)")
            #expect(passed.stdout.contains("signatures: ok, 2 App Store JWS verified"), "\(passed.stdout)")
            #expect(passed.stdout.hasSuffix("PASSED\n"))

            let failed = try await LedgerBinary.run(["verify", "--signatures", "--providers-config", untrusted.path], databaseURL: url)
            #expect(failed.status == 1, "\(failed.stdout)\(failed.stderr)")
            #expect(failed.stdout.contains("signatures: 2 of 2 App Store JWS fail"), "\(failed.stdout)")
            #expect(failed.stdout.contains("order order-1 version 2 (notification)"), "\(failed.stdout)")
            #expect(failed.stdout.contains("unmatched "), "\(failed.stdout)")
            #expect(failed.stdout.hasSuffix("FAILED\n"))

            let unconfigured = try await LedgerBinary.run(["verify", "--signatures"], databaseURL: url)
            #expect(unconfigured.status != 0)
            #expect(unconfigured.stderr.contains("--providers-config"), "\(unconfigured.stderr)")
        }
    }

    /// As a user runs it: `serve` with LEDGER_PROVIDERS_CONFIG says which providers it enabled, and an App Store
    /// notification over HTTP, with no bearer token, verifies an order the client never reported.
    @Test func serveWithAProvidersConfigurationVerifiesAnOrderFromApplesNotification() async throws {
        let apple = try AppleMessages()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("providers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try apple.configurationFile(in: directory)
        try await TestDatabase.withURL { url, client in
            let secret = try await TokenStore(client: client).create(name: "checkout", scopes: [.eventsWrite, .eventsRead])
            let server = try await RunningServer.start(databaseURL: url, environment: ["LEDGER_PROVIDERS_CONFIG": configuration.path])
            defer { server.stop() }
            #expect(server.standardError.contains("app_store enabled, alipay disabled"), "\(server.standardError)")
            let created: JSONValue = [
                "eventId": .string(UUID().uuidString), "type": "order.created",
                "data": ["accountId": "acct-1", "productId": "gems.100", "amount": ["value": 499, "currency": "USD"], "provider": "app_store"],
            ]
            #expect(try await server.post("/v1/orders/order-1/events", token: secret, body: created.canonicalJSON) == 201)
            let notification: JSONValue = ["signedPayload": .string(try apple.notification("ONE_TIME_CHARGE", orderId: "order-1"))]
            #expect(try await server.post("/v1/providers/app-store/notifications", token: nil, body: notification.canonicalJSON) == 200)
            #expect(try await Ledger(client: client).order("order-1")?.state == .verified)
            #expect(try await server.post("/v1/providers/alipay/notify", token: nil, body: "a=b") == 501)
            // A forgery is refused and logged as a security event naming the check that failed.
            let forged: JSONValue = ["signedPayload": .string(try AppleMessages().notification("ONE_TIME_CHARGE", orderId: "order-1"))]
            #expect(try await server.post("/v1/providers/app-store/notifications", token: nil, body: forged.canonicalJSON) == 403)
            #expect(server.standardError.contains("security: provider message refused"), "\(server.standardError)")
            #expect(server.standardError.contains("untrusted_chain"), "\(server.standardError)")
        }
    }

    @Test func serveRefusesAConfigurationThatDoesNotLoad() async throws {
        try await TestDatabase.withURL { url, _ in
            let outcome = try await LedgerBinary.run(
                ["serve", "--port", "0", "--providers-config", "/nonexistent/providers.json"], databaseURL: url)
            #expect(outcome.status != 0)
            #expect(outcome.stderr.contains("/nonexistent/providers.json"), "\(outcome.stderr)")
        }
    }
}
