import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
import Testing
import _CryptoExtras

@Suite("CLI: verify --signatures re-verifies every stored signed message with the configured keys")
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

    /// Alipay's and WeChat Pay's messages as each reaches the ledger: notifications (verified as their endpoints verify
    /// them; one of each matching no order, kept alone; WeChat Pay's signed long before the audit) and the answers to
    /// `ledger recover`'s questions (from the stand-ins). `verify --signatures` checks every one again with the file's
    /// keys, names each one another key fails, and says which it could not check for want of keys.
    @Test func storedAlipayAndWeChatPayMessagesVerifyAgainWithTheirKeysAndFailWithOthers() async throws {
        typealias Kit = ProviderTestKit
        let gateway = try FakeAlipayGateway()
        let wechat = try FakeWeChatPayAPI()
        gateway.hold(orderId: "ali-q", tradeNo: "2026112522001400000000000011")
        wechat.hold(orderId: "wx-q", state: "SUCCESS", transactionId: "4200001234202611250000000011")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signatures-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        /// A providers file (keys only, no questions) naming `alipay` as Alipay's key and `wechatPay` as the platform key.
        @Sendable func keys(_ name: String, alipay: _RSA.Signing.PublicKey?, wechatPay: _RSA.Signing.PublicKey?) throws -> String {
            var configuration: [String: Any] = [:]
            if let alipay { configuration["alipay"] = ["appId": Kit.alipayAppId, "publicKey": alipay.pemRepresentation] }
            if let wechatPay {
                configuration["wechatPay"] = [
                    "merchantId": Kit.merchantId, "apiV3Key": Kit.apiV3KeyText,
                    "platformKeys": [["serial": Kit.platformSerial, "pem": wechatPay.pemRepresentation]],
                ]
            }
            let url = directory.appendingPathComponent(name)
            try Kit.json(configuration).write(to: url)
            return url.path
        }

        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            for (orderId, provider) in [("ali-n", "alipay"), ("ali-q", "alipay"), ("wx-n", "wechat_pay"), ("wx-q", "wechat_pay")] {
                _ = try await ledger.record(orderId: orderId, events: [Submission(
                    eventId: UUID(), type: "order.created",
                    data: ["accountId": "acct-1", "productId": "vip.month", "amount": ["value": 1234, "currency": "CNY"], "provider": .string(provider)])],
                    metadata: EventMetadata(actor: "test-suite"))
            }
            // Notifications, verified as /v1/providers/alipay/notify and /v1/providers/wechat/notify verify them; the
            // last Alipay one signs a trade_no the event rules refuse, so it is kept alone, refused.
            for (orderId, tradeNo) in [("ali-n", "2026050122001400000000000020"), ("nobody", "2026050122001400000000000021"), ("ali-n", "T x ü")] {
                let body = try Kit.alipayBody(Kit.alipayParameters([
                    "out_trade_no": orderId, "notify_id": "notify-\(orderId)-\(tradeNo.count)", "trade_no": tradeNo,
                ]))
                _ = try await ledger.recordProviderMessage(try Kit.alipayVerifier().verify(body: body).message(receivedAt: Date()))
            }
            for (index, orderId) in ["wx-n", "nobody"].enumerated() {
                var resource = Kit.wechatPaymentResource()
                resource["out_trade_no"] = orderId
                resource["transaction_id"] = "420000123420261125000000002\(index)"
                let body = try Kit.wechatBody(resource: resource, id: "EV-\(orderId)")
                let headers = try Kit.wechatHeaders(body: body, timestamp: Kit.now)
                let notification = try Kit.wechatVerifier().verify(headers: headers, body: body, now: Kit.now)
                _ = try await ledger.recordProviderMessage(notification.message(headers: headers, receivedAt: Date()))
            }
            // Answers to the ledger's questions, recorded by `ledger recover`.
            try await gateway.run { base async throws -> Void in
                let keyFile = directory.appendingPathComponent("app_private_key.pem")
                try Data(gateway.appPrivateKeyPEM.utf8).write(to: keyFile)
                let providers = directory.appendingPathComponent("alipay-query.json")
                try Kit.json(["alipay": [
                    "appId": Kit.alipayAppId, "publicKey": Kit.alipayKey.publicKey.pemRepresentation,
                    "query": ["appPrivateKeyPath": keyFile.lastPathComponent, "gatewayURL": base],
                ]]).write(to: providers)
                let recovered = try await LedgerBinary.run(["recover", "--order", "ali-q", "--providers-config", providers.path], databaseURL: url)
                #expect(recovered.status == 0, "\(recovered.stdout)\(recovered.stderr)")
            }
            try await wechat.run { base async throws -> Void in
                let providers = try wechat.providersFile(in: directory, base: base)
                let recovered = try await LedgerBinary.run(["recover", "--order", "wx-q", "--providers-config", providers], databaseURL: url)
                #expect(recovered.status == 0, "\(recovered.stdout)\(recovered.stderr)")
            }

            let right = try keys("right.json", alipay: Kit.alipayKey.publicKey, wechatPay: Kit.wechatPlatformKey.publicKey)
            let passed = try await LedgerBinary.run(["verify", "--signatures", "--providers-config", right], databaseURL: url)
            #expect(passed.status == 0, "\(passed.stdout)\(passed.stderr)")
            #expect(passed.stdout.contains("signatures: ok, 4 Alipay messages verified\nsignatures: ok, 3 WeChat Pay messages verified\n"),
                    "\(passed.stdout)")
            #expect(!passed.stdout.contains("App Store"), "none kept, none configured: \(passed.stdout)")
            #expect(passed.stdout.hasSuffix("PASSED\n"))

            let other = try keys("other.json", alipay: Kit.otherRSAKey.publicKey, wechatPay: Kit.otherRSAKey.publicKey)
            let failed = try await LedgerBinary.run(["verify", "--signatures", "--providers-config", other], databaseURL: url)
            #expect(failed.status == 1, "\(failed.stdout)\(failed.stderr)")
            for expected in [
                "signatures: 4 of 4 Alipay messages fail", "  order ali-n version 2 (notification): signature_invalid",
                "  unmatched notify-nobody-28 (notification): signature_invalid", "  refused notify-ali-n-5 (notification): signature_invalid",
                "  order ali-q version 2 (query): signature_invalid",
                "signatures: 3 of 3 WeChat Pay messages fail", "  order wx-n version 2 (notification): signature_invalid",
                "  unmatched EV-nobody (notification): signature_invalid", "  order wx-q version 2 (query): signature_invalid",
            ] {
                #expect(failed.stdout.contains(expected + "\n"), "\(expected): \(failed.stdout)")
            }
            #expect(failed.stdout.hasSuffix("FAILED\n"))

            // No WeChat Pay keys in the file: its messages are not checked, said so, and not claimed ok.
            let alipayOnly = try keys("alipay-only.json", alipay: Kit.alipayKey.publicKey, wechatPay: nil)
            let partial = try await LedgerBinary.run(["verify", "--signatures", "--providers-config", alipayOnly], databaseURL: url)
            #expect(partial.status == 0, "\(partial.stdout)\(partial.stderr)")
            #expect(partial.stdout.contains("signatures: ok, 4 Alipay messages verified"), "\(partial.stdout)")
            #expect(partial.stdout.contains("signatures: 3 WeChat Pay messages not checked: the providers file has no wechatPay section"),
                    "\(partial.stdout)")
            #expect(!partial.stdout.contains("WeChat Pay messages verified"), "\(partial.stdout)")
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
