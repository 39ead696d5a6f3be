import Foundation
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerProviders
import LedgerTestSupport
import ProviderTestSupport
import Testing

/// A provider's message is genuine once its signature holds, but what it says must still pass the event rules
/// before it becomes an event: a correctly signed Alipay `trade_no` of `T x ü` used to be stored as a
/// `provider.notified` event whose transaction id the ledger's own rules refuse, and from then on the order's history
/// answered 500 for good and `ledger verify` failed. Such a message is kept verbatim, listed for finance, and never
/// applied; one the ledger cannot even key (a 100 KB `notify_id`) is refused in the provider's format and logged.
@Suite("Provider messages: every value passes the event rules before it is recorded")
struct ProviderFactRulesAPITests {
    static let verifiers = ProviderVerifiers(alipay: ProviderTestKit.alipayVerifier(), wechatPay: ProviderTestKit.wechatVerifier())
    static let yuan = Money(value: 1234, currency: "CNY")

    func alipay(_ api: API, _ changes: [String: String], totalAmount: String = "12.34") async throws -> API.Answer {
        try await api.postAlipay(try ProviderTestKit.alipayBody(ProviderTestKit.alipayParameters(changes, totalAmount: totalAmount)))
    }

    func wechat(_ api: API, id: String, eventType: String = "TRANSACTION.SUCCESS", resource: [String: Any]) async throws -> API.Answer {
        let body = try ProviderTestKit.wechatBody(eventType: eventType, resource: resource, id: id)
        return try await api.postWeChat(body, try ProviderTestKit.wechatHeaders(body: body, timestamp: Date()))
    }

    static func payment(_ changes: [String: Any] = [:], amount: [String: Any] = [:]) -> [String: Any] {
        var resource = ProviderTestKit.wechatPaymentResource()
        for (key, value) in changes { resource[key] = value }
        var money = resource["amount"] as? [String: Any] ?? [:]
        for (key, value) in amount { money[key] = value }
        resource["amount"] = money
        return resource
    }

    /// The order's history reads back, and so does every stored event (`ledger verify`).
    func expectReadable(_ api: API, _ orderIds: [String], _ note: String) async throws {
        for orderId in orderIds {
            let history = try await api.get("/v1/orders/\(orderId)/history")
            #expect(history.status == .ok, "\(note): history of \(orderId) answers \(history.status): \(history.bodyText)")
        }
        let report = try await LedgerDatabase(client: api.ledger.client).operations.verify()
        #expect(report.passed, "\(note): ledger verify fails: \(report)")
    }

    @Test func aSignedAlipayTradeNoTheRulesRefuseIsKeptAndListedNotRecorded() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .alipay, amount: Self.yuan)
            let answer = try await alipay(api, ["trade_no": "T x ü"])
            #expect(answer.bodyText == "success", "kept: Alipay need not send it again")
            #expect(try await api.eventTypes("order-1") == ["order.created", "payment.queued"])
            try await expectReadable(api, ["order-1"], "T x ü")
            let listed = try await api.anomalies("refused_provider_message")
            #expect(listed.map { $0["orderId"] } == ["order-1"])
            #expect(listed.first?["detail"]?.canonicalJSON.contains("data.transactionId") == true, "\(listed)")
            // Alipay's retry of the same notify_id is a duplicate, not a second row.
            #expect(try await alipay(api, ["trade_no": "T x ü"]).bodyText == "success")
            #expect(try await api.providerRows() == 1)
        }
    }

    @Test func signedWeChatValuesTheRulesRefuseAreKeptListedAndNeverA500() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .wechatPay, amount: Self.yuan)
            let cases: [(String, [String: Any])] = [
                ("a negative total", Self.payment(amount: ["total": -100])),
                ("currency cny", Self.payment(amount: ["currency": "cny"])),
                ("a 1,000-character currency", Self.payment(amount: ["currency": String(repeating: "C", count: 1000)])),
                ("total 2^63-1", Self.payment(amount: ["total": Int64.max])),
                ("a transaction id with spaces", Self.payment(["transaction_id": "T x ü"])),
            ]
            for (index, (name, resource)) in cases.enumerated() {
                let answer = try await wechat(api, id: "EV-\(index)", resource: resource)
                #expect(answer.status == .noContent, "\(name): \(answer.status) \(answer.bodyText)")
            }
            #expect(try await api.state("order-1") == "payment_queued", "nothing was applied")
            try await expectReadable(api, ["order-1"], "WeChat values")
            #expect(try await api.anomalies("refused_provider_message").count == cases.count)
        }
    }

    @Test func aSignedMessageTheLedgerCannotKeyIsRefusedInTheProvidersFormat() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .alipay, amount: Self.yuan)
            let longId = try await alipay(api, ["notify_id": String(repeating: "n", count: 100_000)])
            #expect(longId.status == .badRequest, "\(longId.bodyText)")
            #expect(longId.bodyText == "failure")
            // Long values the ledger can keep are kept: a 10 KB trade_no is listed, a 10 KB out_trade_no unmatched.
            #expect(try await alipay(api, ["trade_no": String(repeating: "t", count: 10_000), "notify_id": "n-2"]).bodyText == "success")
            #expect(try await api.anomalies("refused_provider_message").count == 1)
            let elsewhere = try await wechat(api, id: "EV-long", resource: Self.payment(["out_trade_no": String(repeating: "o", count: 10_000)]))
            #expect(elsewhere.status == .noContent, "\(elsewhere.bodyText)")
            #expect(try await api.providerRows() == 2)
            try await expectReadable(api, ["order-1"], "long values")
        }
    }

    @Test func aProviderRefundOfMoreThanWasPaidIsRecordedNotAppliedAndListedAsAnAmountMismatch() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .wechatPay, amount: Self.yuan)
            #expect(try await wechat(api, id: "EV-pay", resource: Self.payment()).status == .noContent)
            #expect(try await api.state("order-1") == "verified")
            var refund = ProviderTestKit.wechatRefundResource()
            refund["amount"] = ["total": 1234, "refund": 99_999, "payer_total": 1234, "payer_refund": 99_999]
            let answer = try await wechat(api, id: "EV-refund", eventType: "REFUND.SUCCESS", resource: refund)
            #expect(answer.status == .noContent, "\(answer.bodyText)")
            #expect(try await api.state("order-1") == "verified", "the refund was not applied")
            #expect(try await api.anomalies("amount_mismatch").map { $0["orderId"] } == ["order-1"])
            try await expectReadable(api, ["order-1"], "refund past the payment")
        }
    }

    /// Random signed payloads through both endpoints: whatever a provider signs, the answer is never a 500, and every
    /// event that was accepted reads back through the order's history and `ledger verify`.
    @Test func randomSignedPayloadsNeverLeaveAnEventThatCannotBeReadBack() async throws {
        try await API.run(providers: Self.verifiers) { api in
            let orders = ["p-1", "p-2"]
            try await api.createOrder("p-1", provider: .alipay, amount: Self.yuan)
            try await api.createOrder("p-2", provider: .wechatPay, amount: Self.yuan)
            var random = SeededRandom(seed: UInt64(Date().timeIntervalSince1970))
            let seed = random.seed
            for round in 0..<40 {
                let orderId = random.pick(orders + ["unknown-order", "T x", ""])
                let alipay = try await alipay(api, [
                    "notify_id": "r-\(round)", "out_trade_no": orderId, "trade_no": random.text(),
                    "trade_status": random.pick(["TRADE_SUCCESS", "TRADE_FINISHED", "TRADE_CLOSED", "WAIT_BUYER_PAY"]),
                ], totalAmount: random.pick(["12.34", "0.01", "999999999999999.99", "1", "12.3", "0"]))
                #expect(alipay.status.code < 500, "seed \(seed) round \(round): Alipay \(alipay.status) \(alipay.bodyText)")
                let wechat = try await wechat(api, id: "R-\(round)", resource: Self.payment(
                    ["out_trade_no": orderId, "transaction_id": random.text(),
                     "trade_state": random.pick(["SUCCESS", "CLOSED", "NOTPAY", "REFUND"])],
                    amount: ["total": random.pick([1234, 0, -1, Int64.max, Money.maximumValue, Money.maximumValue + 1]),
                             "currency": random.pick(["CNY", "cny", "USD", "", "ÉUR"])]))
                #expect(wechat.status.code < 500, "seed \(seed) round \(round): WeChat \(wechat.status) \(wechat.bodyText)")
            }
            try await expectReadable(api, orders, "seed \(seed)")
        }
    }
}

extension SeededRandom {
    /// A transaction id, well-formed or not: digits, spaces, accents, slashes, very long.
    mutating func text() -> String {
        pick(["2026050122001400001234567890", "T x ü", "a/b", String(repeating: "9", count: 300), "tx-\(next() % 1000)", "é", "-"])
    }
}
