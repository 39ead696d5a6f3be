import Foundation
import LedgerCore
import LedgerProviderClients
import LedgerProviders
import ProviderTestSupport
import Synchronization
import Testing

@Suite("API: support asks the provider now; an order shows its recovery")
struct RecoveryAPITests {
    static let verifiers = ProviderVerifiers(wechatPay: ProviderTestKit.wechatVerifier())

    /// The questions the ledger can put to the WeChat Pay stand-in at `base`.
    static func questions(_ wechat: FakeWeChatPayAPI, base: String) -> ProviderQuestions {
        ProviderQuestions(
            clients: ProviderClients(wechatPay: WeChatPayAPI(
                merchantId: ProviderTestKit.merchantId, serial: wechat.merchantSerial, privateKey: wechat.merchantKey, baseURL: base)),
            verifiers: verifiers, logger: API.logger)
    }

    /// Support asks; asking again within 10 s is refused (429, `Retry-After`) without a question to the provider;
    /// after that, the provider's new answer is recorded. People's questions never use up the schedule's attempts.
    @Test func supportAsksNowAndTheOrderShowsEachAttempt() async throws {
        let wechat = try FakeWeChatPayAPI()
        wechat.hold(orderId: "wx-1", state: "NOTPAY", transactionId: nil)
        let clock = Mutex(Date())
        try await wechat.run { base in
            try await API.run(providers: Self.verifiers, questions: Self.questions(wechat, base: base),
                              recoveryClock: { clock.withLock { $0 } }) { api in
                try await api.createOrder("wx-1", provider: .wechatPay, amount: Money(value: 1234, currency: "CNY"))

                // A scope of its own: reading orders is not asking providers.
                let reader = try await api.request(.post, "/v1/orders/wx-1/recover", token: "reader")
                #expect(reader.status == .forbidden && reader.errorCode == "forbidden", "\(reader.bodyText)")

                let notPaid = try await api.request(.post, "/v1/orders/wx-1/recover")
                #expect(notPaid.status == .ok, "\(notPaid.bodyText)")
                #expect(notPaid.json["outcome"] == "not_yet" && notPaid.json["status"] == "pending" && notPaid.json["attempt"] == 1)
                #expect(notPaid.json["askedBy"] == "token:all" && notPaid.json["providerWords"] != .null)
                #expect(notPaid.json["nextAttemptAt"] != .null)
                // Kept as it came, with the headers that sign it, for an auditor.
                #expect(notPaid.json["answer"]?["verified"] == true && notPaid.json["answer"]?["signature"] != nil, "\(notPaid.bodyText)")

                let soon = try await api.request(.post, "/v1/orders/wx-1/recover")
                #expect(soon.status == .tooManyRequests && soon.errorCode == "too_soon", "\(soon.bodyText)")
                #expect(soon.headers[.retryAfter] == "10", "\(soon.headers)")
                #expect(wechat.requests == ["200 wx-1"], "refused before the provider is asked")
                clock.withLock { $0 = $0.addingTimeInterval(10) }

                wechat.hold(orderId: "wx-1", state: "SUCCESS", transactionId: "4200001234202611250000000001")
                let paid = try await api.request(.post, "/v1/orders/wx-1/recover")
                #expect(paid.status == .ok && paid.json["outcome"] == "recovered" && paid.json["status"] == "recovered", "\(paid.bodyText)")
                #expect(paid.json["recorded"] == ["provider.notified", "receipt.received", "receipt.verified"])

                let order = try await api.get("/v1/orders/wx-1")
                #expect(order.json["state"] == "verified")
                #expect(order.json["recovery"]?["status"] == "recovered" && order.json["recovery"]?["reason"] == "asked", "\(order.bodyText)")
                guard case .array(let attempts)? = order.json["recovery"]?["attempts"] else {
                    Issue.record("no attempts: \(order.bodyText)")
                    return
                }
                #expect(attempts.map { $0["outcome"] } == ["recovered", "not_yet"])

                let unknown = try await api.request(.post, "/v1/orders/nobody/recover")
                #expect(unknown.status == .notFound, "\(unknown.bodyText)")
                let never = try await api.get("/v1/orders/wx-1")
                #expect(never.json["recovery"] != .null)
                // The order says whether its provider can be asked here: WeChat Pay's can, the App Store's cannot.
                #expect(never.json["providerAskable"] == true, "\(never.bodyText)")
                try await api.createOrder("apple-1")
                #expect(try await api.get("/v1/orders/apple-1").json["providerAskable"] == false)
            }
        }
        #expect(wechat.requests == ["200 wx-1", "200 wx-1"])
    }

    @Test func withoutAProviderToAskTheRouteAnswers501AndOrdersShowNoRecovery() async throws {
        try await API.run { api in
            try await api.createOrder("order-1")
            let answer = try await api.request(.post, "/v1/orders/order-1/recover")
            #expect(answer.status == .notImplemented && answer.errorCode == "not_configured", "\(answer.bodyText)")
            let order = try await api.get("/v1/orders/order-1")
            #expect(order.json["recovery"] == .null && order.json["providerAskable"] == false, "\(order.bodyText)")
        }
    }

    /// An older app's `receipt.received` carries the base64 receipt and no transaction id: the ledger reads the id
    /// from the receipt. A receipt naming no purchase, or none of the order's product, is refused saying so, and
    /// changes nothing (several purchases: `LegacyReceiptAPITests`).
    @Test func aLegacyReceiptNamesTheTransactionToAskAbout() async throws {
        try await API.run { api in
            try await api.createOrder("order-1")
            func receipt(_ purchases: [ReceiptTestKit.Purchase]) throws -> String {
                Data(try ReceiptTestKit.receipt(payload: ReceiptTestKit.payload(purchases: purchases))).base64EncodedString()
            }
            func post(_ receipt: String) async throws -> API.Answer {
                try await api.post("order-1", ["eventId": .string(UUID().uuidString), "type": "receipt.received", "data": ["receipt": .string(receipt)]])
            }
            let none = try await post(try receipt([]))
            #expect(none.status == .badRequest && none.json["error"]?["details"]?["field"] == "data.receipt", "\(none.bodyText)")
            #expect(none.bodyText.contains("in_app is empty") && none.bodyText.contains("says nothing about whether the order was paid"))
            let otherProducts = try await post(try receipt([ReceiptTestKit.first, ReceiptTestKit.second]))
            #expect(otherProducts.status == .conflict && otherProducts.errorCode == "product_mismatch", "\(otherProducts.bodyText)")
            #expect(otherProducts.bodyText.contains("1000000000000001") && otherProducts.bodyText.contains("1000000000000002"))
            let garbage = try await post("bm90IGEgcmVjZWlwdA==")
            #expect(garbage.status == .badRequest && garbage.json["error"]?["details"]?["field"] == "data.receipt", "\(garbage.bodyText)")
            #expect(try await api.ledger.order("order-1")?.state == .paymentQueued)

            var purchase = ReceiptTestKit.second
            purchase.productId = "gems.100"
            let one = try await post(try receipt([purchase]))
            #expect(one.status == .created, "\(one.bodyText)")
            let order = try #require(try await api.ledger.order("order-1"))
            #expect(order.state == .receiptReceived && order.transactionId == "1000000000000002")
            let received = try #require(try await api.ledger.history("order-1")?.entries.last?.event)
            #expect(received.data["originalTransactionId"] == "1000000000000000" && received.data["receiptSha256"] != nil)
            #expect(received.data["otherPurchases"] == nil)
        }
    }
}
