import Foundation
import HTTPTypes
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerProviders
import LedgerTestSupport
import ProviderTestSupport
import Testing
import X509

@Suite("Signed transactions on receipt.received: the ledger verifies and records the verification itself")
struct SignedTransactionAPITests {
    func receipt(_ jws: String, transactionId: String? = nil) -> JSONValue {
        var data: [String: JSONValue] = ["signedTransaction": .string(jws)]
        data["transactionId"] = transactionId.map(JSONValue.string)
        return ["eventId": .string(UUID().uuidString), "type": "receipt.received", "data": .object(data)]
    }

    @Test func aValidSignedTransactionVerifiesTheOrder() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            let body = receipt(try apple.transaction(orderId: "order-1"))
            let answer = try await api.post("order-1", body)
            #expect(answer.status == .created, "\(answer.bodyText)")
            #expect(try await api.state("order-1") == "verified")
            #expect(try await api.eventTypes("order-1") == ["order.created", "payment.queued", "receipt.received", "receipt.verified"])
            // The same request again is an idempotent replay.
            #expect(try await api.post("order-1", body).status == .ok)
        }
    }

    @Test func whatAppleSignedIsJudgedByTheOrderRules() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            let answer = try await api.post("order-1", receipt(try apple.transaction(orderId: "order-1", productId: "gems.9999")))
            #expect(answer.status == .conflict)
            #expect(answer.errorCode == "product_mismatch")
            #expect(try await api.state("order-1") == "payment_queued")
        }
    }

    /// A StoreKit 2 transaction bought for order-2 (its appAccountToken), posted as order-1's: Apple's signature
    /// holds, and what it signed says the purchase is not this order's.
    @Test func aSignedTransactionBoughtForAnotherOrderDoesNotVerifyThisOne() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            try await api.createOrder("order-2")
            let answer = try await api.post("order-1", receipt(try apple.transaction(orderId: "order-2")))
            #expect(answer.status == .conflict)
            #expect(answer.errorCode == "account_mismatch")
            #expect(answer.json["error"]?["details"]?["actual"] == .string(AppAccountToken.forOrderId("order-2").lowercasedText))
            #expect(try await api.state("order-1") == "payment_queued")
        }
    }

    /// Order-1 claims a transaction; Apple's notification about it carries order-2's appAccountToken. The message is
    /// recorded on order-1 (it names order-1's transaction), and does not verify it.
    @Test func aNotificationForAnotherOrdersTokenDoesNotVerifyTheOrderClaimingItsTransaction() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            try await api.createOrder("order-2")
            let claim = try await api.post("order-1", [
                "eventId": .string(UUID().uuidString), "type": "receipt.received", "data": ["transactionId": "tx-claimed"],
            ])
            #expect(claim.status == .created, "\(claim.bodyText)")
            let answer = try await api.notify(appStore: try apple.notification("ONE_TIME_CHARGE", orderId: "order-2", transactionId: "tx-claimed"))
            #expect(answer.status == .ok, "\(answer.bodyText)")
            #expect(answer.json["orderId"] == "order-1")
            #expect(answer.json["refusal"]?["code"] == "account_mismatch")
            #expect(try await api.state("order-1") == "receipt_received")
            #expect(try await api.state("order-2") == "payment_queued")
        }
    }

    /// Issue 41, item 5: a 4.99 USD order and Apple's prices of 4991, -4990 and 1 milliunits, none exactly 499 cents.
    @Test func aSignedTransactionPricedOtherThanTheOrderDoesNotVerifyIt() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            for (index, price) in [4991, -4990, 1].enumerated() {
                let orderId = "order-\(index)"
                try await api.createOrder(orderId)
                let signed = try apple.transaction(orderId: orderId, transactionId: "tx-\(index)", price: Int64(price))
                let answer = try await api.post(orderId, receipt(signed))
                #expect(answer.status == .conflict, "\(price): \(answer.bodyText)")
                #expect(answer.errorCode == "amount_mismatch", "\(price)")
                #expect(try await api.state(orderId) == "payment_queued", "\(price)")
            }
            try await api.createOrder("order-exact")
            let exact = try await api.post("order-exact", receipt(try apple.transaction(orderId: "order-exact", transactionId: "tx-exact", price: 4990)))
            #expect(exact.status == .created, "\(exact.bodyText)")
            #expect(try await api.state("order-exact") == "verified")
        }
    }

    @Test func aForgedSignedTransactionFailsVerificationPermanently() async throws {
        let apple = try AppleMessages()
        let stranger = try ProviderTestKit.CA(name: "Stranger")
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            let forged = try apple.transaction(orderId: "order-1", by: stranger)
            let answer = try await api.post("order-1", receipt(forged, transactionId: "2000000000000001"))
            #expect(answer.status == .created, "\(answer.bodyText)")
            #expect(try await api.state("order-1") == "rejected")
            let history = try await api.get("/v1/orders/order-1/history").json["events"]?.elements ?? []
            #expect(history.last?["data"]?["code"] == "signature_invalid")
            // The forged bytes are not kept: only their SHA-256.
            #expect(history.contains { $0["data"]?["signedTransaction"] != nil } == false)

            let unnamed = try await api.post("order-2", receipt(forged))
            #expect(unnamed.status == .badRequest)
        }
    }

    @Test func aTransactionIdOtherThanTheSignedOneIsRefused() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            let answer = try await api.post("order-1", receipt(try apple.transaction(orderId: "order-1"), transactionId: "claimed-other"))
            #expect(answer.status == .badRequest)
            #expect(answer.json["error"]?["details"]?["field"] == "data.transactionId")
            #expect(try await api.eventTypes("order-1").count == 2)
        }
    }

    @Test func clientsCannotPostProviderFacts() async throws {
        try await API.run { api in
            try await api.createOrder("order-1")
            let answer = try await api.post("order-1", [
                "eventId": .string(UUID().uuidString), "type": "provider.notified",
                "data": ["provider": "app_store", "notificationId": "n", "notificationType": "ONE_TIME_CHARGE",
                         "effect": "payment", "signedAt": "2026-11-24T00:00:00Z", "evidence": [:]],
            ])
            #expect(answer.status == .badRequest)
            #expect(answer.json["error"]?["details"]?["field"] == "type")
        }
    }
}

@Suite("Provider endpoints when the database cannot answer: a 5xx, so the provider retries, and nothing half-written")
struct ProviderUnavailableAPITests {
    @Test func eachProviderIsToldToRetryAndItsRetryIsRecorded() async throws {
        let apple = try AppleMessages()
        var verifiers = apple.verifiers
        verifiers.alipay = ProviderTestKit.alipayVerifier()
        verifiers.wechatPay = ProviderTestKit.wechatVerifier()
        try await API.run(providers: verifiers) { api in
            try await api.createOrder("apple-1")
            try await api.createOrder("order-1", provider: .alipay, amount: Money(value: 1234, currency: "CNY"))
            let released = AsyncStream<Void>.makeStream()
            let locked = AsyncStream<Void>.makeStream()
            // Another session holds the providers' table: every delivery waits on it past its deadline.
            let holder = Task {
                try await api.tokens.client.withTransaction(logger: .init(label: "test")) { connection in
                    try await connection.query("LOCK TABLE provider_messages IN ACCESS EXCLUSIVE MODE", logger: .init(label: "test"))
                    locked.continuation.yield()
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask { for await _ in released.stream { break } }
                        group.addTask { try? await Task.sleep(for: .seconds(60)) }
                        await group.next()
                        group.cancelAll()
                    }
                }
            }
            defer { released.continuation.finish() }
            for await _ in locked.stream { break }

            let jws = try apple.notification("ONE_TIME_CHARGE", orderId: "apple-1")
            let form = String(decoding: try ProviderTestKit.alipayBody(ProviderTestKit.alipayParameters()), as: UTF8.self)
            let (appleAnswer, alipayAnswer) = try await Deadline.$request.withValue(.seconds(2)) {
                (try await api.notify(appStore: jws),
                 try await api.request(.post, "/v1/providers/alipay/notify", token: nil, body: form,
                                       contentType: "application/x-www-form-urlencoded"))
            }
            #expect(appleAnswer.status == .serviceUnavailable, "\(appleAnswer.bodyText)")
            #expect(alipayAnswer.status == .serviceUnavailable)
            #expect(alipayAnswer.bodyText == "failure")
            released.continuation.finish()
            try await holder.value
            #expect(try await api.providerRows() == 0)

            #expect(try await api.notify(appStore: jws).json["outcome"] == "recorded")
            #expect(try await api.request(.post, "/v1/providers/alipay/notify", token: nil, body: form,
                                          contentType: "application/x-www-form-urlencoded").bodyText == "success")
            #expect(try await api.state("apple-1") == "verified")
            #expect(try await api.state("order-1") == "verified")
        }
    }
}
