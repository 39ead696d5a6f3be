import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import ProviderTestSupport
import Testing
import _CryptoExtras

/// `ledger recover --order`: the ledger asks Apple (a stand-in that checks the ledger's token as Apple does and
/// answers signed by the tests' CA) and records the verified answer as the provider's own word.
@Suite("CLI: recover asks the App Store and records its signed answer")
struct RecoverCommandTests {
    /// A providers file trusting `messages`' root, with the App Store Server API pointed at `base` and signed with
    /// `key` (the stand-in's key unless told otherwise).
    static func configuration(in directory: URL, messages: AppleMessages, apple: FakeAppStoreServerAPI, base: String, keyPEM: String? = nil) throws -> URL {
        let keyFile = directory.appendingPathComponent("SubscriptionKey_TESTKEY123.p8")
        try Data((keyPEM ?? apple.privateKeyPEM).utf8).write(to: keyFile)
        let url = directory.appendingPathComponent("providers.json")
        try ProviderTestKit.json(["appStore": [
            "trustedRoots": [["pem": try messages.ca.root.serializeAsPEM().pemString]],
            "apps": [["bundleId": ProviderTestKit.bundleId, "appAppleId": ProviderTestKit.appAppleId, "environments": ["Production", "Sandbox"]]],
            "serverAPI": [
                "keyId": apple.expected.keyId, "issuerId": apple.expected.issuerId, "privateKeyPath": keyFile.lastPathComponent,
                "productionURL": base + "/production", "sandboxURL": base + "/sandbox",
            ],
        ]]).write(to: url)
        return url
    }

    /// An App Store order whose receipt came but was never verified: the lost order recovery is for.
    static func paidButNotVerified(_ orderId: String, transactionId: String, on ledger: Ledger) async throws {
        var lifecycle = Lifecycle()
        lifecycle.transactionId = transactionId
        _ = try await ledger.record(
            orderId: orderId, events: [lifecycle.created, lifecycle.queued, lifecycle.receipt], metadata: EventMetadata(actor: "test-suite"))
    }

    @Test func appleIsAskedAndItsSignedAnswerVerifiesTheOrderOnceAndForAll() async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recover-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        apple.hold(try messages.transaction(orderId: "lost-1", transactionId: "2000000000000101"), for: "2000000000000101")
        // Signed by a CA the ledger does not trust: a forged answer.
        apple.hold(try messages.transaction(orderId: "lost-2", transactionId: "2000000000000102", by: ProviderTestKit.CA()),
                   for: "2000000000000102")

        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            try await Self.paidButNotVerified("lost-1", transactionId: "2000000000000101", on: ledger)
            try await Self.paidButNotVerified("lost-2", transactionId: "2000000000000102", on: ledger)
            try await Self.paidButNotVerified("lost-3", transactionId: "2000000000000103", on: ledger)
            try await apple.run { base async throws -> Void in
                let providers = try Self.configuration(in: directory, messages: messages, apple: apple, base: base).path
                func recover(_ orderId: String, _ extra: [String] = []) async throws -> LedgerBinary.Outcome {
                    try await LedgerBinary.run(["recover", "--order", orderId, "--providers-config", providers] + extra, databaseURL: url)
                }

                let dryRun = try await recover("lost-1", ["--dry-run"])
                #expect(dryRun.status == 0 && dryRun.stdout.contains("would record"), "\(dryRun.stdout)\(dryRun.stderr)")
                #expect(try await ledger.order("lost-1")?.state == .receiptReceived, "a dry run records nothing")

                let recovered = try await recover("lost-1")
                #expect(recovered.status == 0, "\(recovered.stdout)\(recovered.stderr)")
                #expect(recovered.stdout.contains("Production answered: payment, product gems.100, 4.99 USD"), "\(recovered.stdout)")
                #expect(recovered.stdout.contains("recorded on order lost-1: provider.notified, receipt.verified"), "\(recovered.stdout)")
                let history = try #require(try await ledger.history("lost-1"))
                #expect(history.order?.state == .verified)
                let fact = try #require(history.entries.first { $0.event.type == "provider.notified" }?.event)
                #expect(fact.metadata["actor"] == "provider:app_store")
                #expect(fact.data["evidence"]?["source"] == "query")

                // Apple's answer is kept verbatim, and verified again with the rest.
                let signatures = try await LedgerBinary.run(["verify", "--signatures", "--providers-config", providers], databaseURL: url)
                #expect(signatures.status == 0 && signatures.stdout.contains("signatures: ok, 1 App Store JWS verified"), "\(signatures.stdout)")

                let again = try await recover("lost-1")
                #expect(again.status == 0 && again.stdout.contains("already recorded"), "\(again.stdout)")
                #expect(try await ledger.history("lost-1")?.entries.count == history.entries.count, "asked twice, recorded once")


                let forged = try await recover("lost-2")
                #expect(forged.status == 1 && forged.stdout.contains("did not verify"), "\(forged.stdout)\(forged.stderr)")
                #expect(try await ledger.history("lost-2")?.entries.count == 3, "nothing recorded from a forged answer")

                let unknown = try await recover("lost-3")
                #expect(unknown.status == 1 && unknown.stdout.contains("Apple knows no transaction 2000000000000103"), "\(unknown.stdout)")

                // Every order finance lists as lost, asked in one run: the answered one is not recorded twice, the
                // forged and the unknown ones record nothing, and the run succeeds.
                let lost = try await LedgerBinary.run(
                    ["recover", "--lost", "--older-than", "0s", "--providers-config", providers], databaseURL: url)
                #expect(lost.status == 0, "\(lost.stdout)\(lost.stderr)")
                for expected in ["order lost-1 (lost_order):", "already recorded", "order lost-2 (lost_order):", "did not verify",
                                 "order lost-3 (lost_order):", "Apple knows no transaction 2000000000000103"] {
                    #expect(lost.stdout.contains(expected), "\(expected): \(lost.stdout)")
                }
                #expect(try await ledger.history("lost-1")?.entries.count == history.entries.count)

                // Granted, then refunded at Apple: asked again (support's question), Apple's answer carries the
                // revocation, and the refund is recorded.
                var granted = Lifecycle()
                granted.transactionId = "2000000000000101"
                _ = try await ledger.record(orderId: "lost-1", events: [granted.granted()], metadata: EventMetadata(actor: "test-suite"))
                apple.hold(try messages.transaction(orderId: "lost-1", transactionId: "2000000000000101", revokedAt: Date()), for: "2000000000000101")
                let refunded = try await recover("lost-1")
                #expect(refunded.status == 0 && refunded.stdout.contains("recorded on order lost-1: provider.notified, order.refunded"),
                        "\(refunded.stdout)\(refunded.stderr)")
                #expect(try await ledger.order("lost-1")?.state == .refunded)

                for usage in [["recover"], ["recover", "--order", "lost-1", "--lost"], ["recover", "--order", "lost-1", "--older-than", "1m"]] {
                    #expect(try await LedgerBinary.run(usage + ["--providers-config", providers], databaseURL: url).status == 64, "\(usage)")
                }

                // A key Apple does not know: said as a configuration error, exit 78.
                let otherKey = try Self.configuration(
                    in: directory, messages: messages, apple: apple, base: base, keyPEM: FakeAppStoreServerAPI().privateKeyPEM).path
                let refused = try await LedgerBinary.run(["recover", "--order", "lost-3", "--providers-config", otherKey], databaseURL: url)
                #expect(refused.status == 78 && refused.stderr.contains("Apple refused the token (401)"), "\(refused.stderr)")
            }
            #expect(apple.requests.contains("production 200 /production/inApps/v1/transactions/2000000000000101"))
            #expect(apple.requests.contains("sandbox 404 /sandbox/inApps/v1/transactions/2000000000000103"), "Production, then Sandbox")

            let verify = try await LedgerBinary.run(["verify"], databaseURL: url)
            #expect(verify.status == 0, "\(verify.stdout)")
        }
    }

    /// Support has only Apple's emailed receipt: its order id finds the transaction, which is verified and recorded
    /// on the order it belongs to (by its appAccountToken: the app died before sending any receipt).
    @Test func anAppleOrderIdFromTheCustomersReceiptFindsAndRecordsItsTransaction() async throws {
        let messages = try AppleMessages()
        let apple = FakeAppStoreServerAPI()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        apple.holdOrder("MK5TTTR3KP", signedTransactions: [try messages.transaction(orderId: "ao-1", transactionId: "2000000000000901")])
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            _ = try await ledger.record(orderId: "ao-1", events: [lifecycle.created, lifecycle.queued], metadata: EventMetadata(actor: "test-suite"))
            try await apple.run { base async throws -> Void in
                let providers = try Self.configuration(in: directory, messages: messages, apple: apple, base: base).path
                func lookUp(_ id: String) async throws -> LedgerBinary.Outcome {
                    try await LedgerBinary.run(["recover", "--apple-order-id", id, "--providers-config", providers], databaseURL: url)
                }
                let found = try await lookUp("MK5TTTR3KP")
                #expect(found.status == 0 && found.stdout.contains("recovered: Apple signed transaction 2000000000000901"), "\(found.stdout)\(found.stderr)")
                #expect(found.stdout.contains("(order ao-1)"), "\(found.stdout)")
                #expect(try await ledger.order("ao-1")?.state == .verified)
                let again = try await lookUp("MK5TTTR3KP")
                #expect(again.status == 0 && again.stdout.contains("already recorded"), "\(again.stdout)")
                let unknown = try await lookUp("MKNOSUCH01")
                #expect(unknown.status == 1 && unknown.stdout.contains("Apple knows no order MKNOSUCH01"), "\(unknown.stdout)\(unknown.stderr)")
                let both = try await LedgerBinary.run(["recover", "--apple-order-id", "MK5TTTR3KP", "--lost", "--providers-config", providers], databaseURL: url)
                #expect(both.status == 64)
            }
            // Without a providers file nothing can ask: said (78), and the order is not put on the schedule, whose
            // page would promise a question nobody will ask.
            _ = try await ledger.record(orderId: "nobody-asks", events: [
                Submission(eventId: UUID(), type: "order.created", data: [
                    "accountId": "acct-1", "productId": "gems.100", "amount": ["value": 499, "currency": "USD"], "provider": "app_store",
                ]),
            ], metadata: EventMetadata(actor: "test-suite"))
            let unconfigured = try await LedgerBinary.run(["recover", "--order", "nobody-asks"], databaseURL: url)
            #expect(unconfigured.status == 78 && unconfigured.stderr.contains("not configured"), "\(unconfigured.stderr)")
            #expect(try await ledger.orderAndRecovery("nobody-asks", attempts: 10)?.recovery == nil)
            let verify = try await LedgerBinary.run(["verify"], databaseURL: url)
            #expect(verify.status == 0, "\(verify.stdout)")
        }
    }

    /// Alipay is asked by our order id; its answer is signed over the exact text of the response, and only a verified
    /// one is recorded. A gateway that cannot check our signature answers `error_response`.
    @Test func alipayIsAskedByOrderIdAndItsSignedAnswerIsRecorded() async throws {
        let gateway = try FakeAlipayGateway()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recover-alipay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        gateway.hold(orderId: "ali-1", tradeNo: "2026112522001400000000000001", totalAmount: "12.34")
        @Sendable func configuration(_ base: String, appKeyPEM: String) throws -> String {
            let keyFile = directory.appendingPathComponent("app_private_key.pem")
            try Data(appKeyPEM.utf8).write(to: keyFile)
            let url = directory.appendingPathComponent("providers.json")
            try ProviderTestKit.json(["alipay": [
                "appId": ProviderTestKit.alipayAppId, "publicKey": ProviderTestKit.alipayKey.publicKey.pemRepresentation,
                "query": ["appPrivateKeyPath": keyFile.lastPathComponent, "gatewayURL": base],
            ]]).write(to: url)
            return url.path
        }
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            for orderId in ["ali-1", "ali-2"] {
                _ = try await ledger.record(orderId: orderId, events: [
                    Submission(eventId: UUID(), type: "order.created", data: [
                        "accountId": "acct-1", "productId": "vip.month", "amount": ["value": 1234, "currency": "CNY"], "provider": "alipay",
                    ]),
                ], metadata: EventMetadata(actor: "test-suite"))
            }
            try await gateway.run { base async throws -> Void in
                let providers = try configuration(base, appKeyPEM: gateway.appPrivateKeyPEM)
                let recovered = try await LedgerBinary.run(["recover", "--order", "ali-1", "--providers-config", providers], databaseURL: url)
                #expect(recovered.status == 0, "\(recovered.stdout)\(recovered.stderr)")
                #expect(recovered.stdout.contains("Alipay answered: TRADE_SUCCESS, trade 2026112522001400000000000001, 12.34 CNY"), "\(recovered.stdout)")
                #expect(recovered.stdout.contains("recorded on order ali-1: provider.notified, receipt.received"), "\(recovered.stdout)")
                let fact = try #require(try await ledger.history("ali-1")?.entries.first { $0.event.type == "provider.notified" }?.event)
                #expect(fact.metadata["actor"] == "provider:alipay" && fact.data["evidence"]?["source"] == "query")
                #expect(try await ledger.order("ali-1")?.transactionId == "2026112522001400000000000001")

                let notPaid = try await LedgerBinary.run(["recover", "--order", "ali-2", "--providers-config", providers], databaseURL: url)
                #expect(notPaid.status == 1 && notPaid.stdout.contains("ACQ.TRADE_NOT_EXIST"), "\(notPaid.stdout)\(notPaid.stderr)")
                #expect(try await ledger.history("ali-2")?.entries.count == 1)

                // Signed with a key the gateway does not hold: Alipay refuses the request, a configuration error;
                // nothing is recorded.
                let otherKey = try configuration(base, appKeyPEM: try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation)
                let refused = try await LedgerBinary.run(["recover", "--order", "ali-2", "--providers-config", otherKey], databaseURL: url)
                #expect(refused.status == 78 && refused.stderr.contains("isv.invalid-signature"), "\(refused.stdout)\(refused.stderr)")

                // Paid since: asked again, the trade is there, and the order is verified.
                gateway.hold(orderId: "ali-2", tradeNo: "2026112522001400000000000002")
                let rightKey = try configuration(base, appKeyPEM: gateway.appPrivateKeyPEM)
                let paidLater = try await LedgerBinary.run(["recover", "--order", "ali-2", "--providers-config", rightKey], databaseURL: url)
                #expect(paidLater.status == 0 && paidLater.stdout.contains("recorded on order ali-2"), "\(paidLater.stdout)\(paidLater.stderr)")
                #expect(try await ledger.order("ali-2")?.state == .verified)
            }
            #expect(gateway.requests == ["found ali-1", "not-exist ali-2", "invalid-signature ali-2", "found ali-2"])
            let verify = try await LedgerBinary.run(["verify"], databaseURL: url)
            #expect(verify.status == 0, "\(verify.stdout)")
        }
    }

    /// WeChat Pay is asked by our order id with a request it can check; its signed answer is recorded once paid.
    @Test func weChatPayIsAskedByOrderIdAndOnlyAPaidOrderIsRecorded() async throws {
        let wechat = try FakeWeChatPayAPI()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recover-wechat-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        wechat.hold(orderId: "wx-1", state: "SUCCESS", transactionId: "4200001234202611250000000001")
        wechat.hold(orderId: "wx-2", state: "NOTPAY", transactionId: nil)
        @Sendable func configuration(_ base: String, merchantKeyPEM: String) throws -> String {
            try wechat.providersFile(in: directory, base: base, merchantKeyPEM: merchantKeyPEM)
        }
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            for orderId in ["wx-1", "wx-2", "wx-3"] {
                _ = try await ledger.record(orderId: orderId, events: [
                    Submission(eventId: UUID(), type: "order.created", data: [
                        "accountId": "acct-1", "productId": "vip.month", "amount": ["value": 1234, "currency": "CNY"], "provider": "wechat_pay",
                    ]),
                ], metadata: EventMetadata(actor: "test-suite"))
            }
            try await wechat.run { base async throws -> Void in
                let providers = try configuration(base, merchantKeyPEM: wechat.merchantPrivateKeyPEM)
                func recover(_ orderId: String, _ providers: String) async throws -> LedgerBinary.Outcome {
                    try await LedgerBinary.run(["recover", "--order", orderId, "--providers-config", providers], databaseURL: url)
                }
                let paid = try await recover("wx-1", providers)
                #expect(paid.status == 0, "\(paid.stdout)\(paid.stderr)")
                #expect(paid.stdout.contains("WeChat Pay answered: SUCCESS, transaction 4200001234202611250000000001, 12.34 CNY"), "\(paid.stdout)")
                #expect(paid.stdout.contains("recorded on order wx-1: provider.notified, receipt.received"), "\(paid.stdout)")
                let fact = try #require(try await ledger.history("wx-1")?.entries.first { $0.event.type == "provider.notified" }?.event)
                #expect(fact.metadata["actor"] == "provider:wechat_pay" && fact.data["evidence"]?["source"] == "query")

                let notPaid = try await recover("wx-2", providers)
                #expect(notPaid.status == 1 && notPaid.stdout.contains("NOTPAY: not paid yet"), "\(notPaid.stdout)\(notPaid.stderr)")
                let unknown = try await recover("wx-3", providers)
                #expect(unknown.status == 1 && unknown.stdout.contains("ORDER_NOT_EXIST"), "\(unknown.stdout)\(unknown.stderr)")
                #expect(try await ledger.history("wx-2")?.entries.count == 1)
                #expect(try await ledger.history("wx-3")?.entries.count == 1)

                // A merchant key WeChat Pay does not hold: it cannot check the request, a configuration error.
                let otherKey = try configuration(base, merchantKeyPEM: try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation)
                let refused = try await recover("wx-2", otherKey)
                #expect(refused.status == 78 && refused.stderr.contains("SIGN_ERROR"), "\(refused.stdout)\(refused.stderr)")

                // Every answer is kept; the signed ones are checked again: wx-1's payment (on the order) and the two
                // "not yet"s (on their attempts). The unsigned refusal is kept too, and not counted as signed.
                let audit = try await LedgerBinary.run(["verify", "--signatures", "--providers-config", providers], databaseURL: url)
                #expect(audit.status == 0 && audit.stdout.contains("signatures: ok, 3 WeChat Pay messages verified"), "\(audit.stdout)")
            }
            #expect(wechat.requests == ["200 wx-1", "200 wx-2", "404 wx-3", "401 wx-2"])
            let verify = try await LedgerBinary.run(["verify"], databaseURL: url)
            #expect(verify.status == 0, "\(verify.stdout)")
        }
    }
}
