import Foundation
import HTTPTypes
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerProviders
import LedgerTestSupport
import ProviderTestSupport
import Testing

@Suite("Alipay and WeChat Pay notifications: verified, recorded, answered as each provider expects")
struct AlipayAndWeChatPayAPITests {
    static let verifiers = ProviderVerifiers(alipay: ProviderTestKit.alipayVerifier(), wechatPay: ProviderTestKit.wechatVerifier())
    static let yuan = Money(value: 1234, currency: "CNY")

    func alipay(_ api: API, _ body: [UInt8]) async throws -> API.Answer { try await api.postAlipay(body) }

    func wechat(_ api: API, _ body: [UInt8], _ headers: WeChatPayHeaders) async throws -> API.Answer {
        try await api.postWeChat(body, headers)
    }

    @Test func anAlipayPaymentVerifiesTheOrderAndARetryIsADuplicate() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .alipay, amount: Self.yuan)
            let body = try ProviderTestKit.alipayBody(ProviderTestKit.alipayParameters())
            let answer = try await alipay(api, body)
            #expect(answer.status == .ok)
            #expect(answer.bodyText == "success")
            #expect(try await api.state("order-1") == "verified")
            #expect(try await alipay(api, body).bodyText == "success")
            #expect(try await api.eventTypes("order-1").filter { $0 == "provider.notified" }.count == 1)
        }
    }

    @Test func anAlipayAmountOtherThanTheOrdersIsRecordedNotAppliedAndListed() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .alipay, amount: Self.yuan)
            let answer = try await alipay(api, try ProviderTestKit.alipayBody(ProviderTestKit.alipayParameters(totalAmount: "0.01")))
            #expect(answer.bodyText == "success")
            #expect(try await api.state("order-1") == "payment_queued")
            let mismatch = try await api.anomalies("amount_mismatch")
            #expect(mismatch.map { $0["orderId"] } == ["order-1"])
        }
    }

    /// A cross-border payment of 12.34 USD for an order of 12.34 CNY: genuine, so recorded and answered as received;
    /// not the order's amount, so not applied, and listed.
    @Test func anAlipayPaymentInAnotherCurrencyIsRecordedNotAppliedAndListed() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .alipay, amount: Self.yuan)
            let parameters = ProviderTestKit.alipayParameters(totalAmount: "12.34") + [("trans_currency", "USD")]
            let answer = try await alipay(api, try ProviderTestKit.alipayBody(parameters))
            #expect(answer.bodyText == "success")
            #expect(try await api.state("order-1") == "payment_queued")
            let history = try await api.get("/v1/orders/order-1/history").json["events"]?.elements ?? []
            #expect(history.first { $0["type"] == "provider.notified" }?["data"]?["amount"] == ["value": 1234, "currency": "USD"])
            #expect(try await api.anomalies("amount_mismatch").map { $0["orderId"] } == ["order-1"])
        }
    }

    @Test func forgedAlipayNotificationsWriteNothing() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .alipay, amount: Self.yuan)
            var otherApp = ProviderTestKit.alipayParameters()
            otherApp[5] = ("app_id", "2021999999999999")
            let cases: [(String, [UInt8])] = [
                ("wrong key", try ProviderTestKit.alipayBody(ProviderTestKit.alipayParameters(), key: ProviderTestKit.otherRSAKey)),
                ("wrong app id", try ProviderTestKit.alipayBody(otherApp)),
                ("amount changed after signing", try ProviderTestKit.alipayBody(
                    ProviderTestKit.alipayParameters(totalAmount: "0.01"), signedParameters: ProviderTestKit.alipayParameters())),
                ("not a form", Array("%%%".utf8)),
            ]
            for (name, body) in cases {
                let answer = try await alipay(api, body)
                #expect(answer.bodyText == "failure", "\(name)")
                #expect(answer.status.code >= 400 && answer.status.code < 500, "\(name): \(answer.status)")
            }
            #expect(try await api.providerRows() == 0)
            #expect(try await api.eventTypes("order-1").count == 2)
        }
    }

    @Test func aWeChatPayPaymentAndRefundAreRecorded() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .wechatPay, amount: Self.yuan)
            let payment = try ProviderTestKit.wechatBody(resource: ProviderTestKit.wechatPaymentResource())
            let answer = try await wechat(api, payment, try ProviderTestKit.wechatHeaders(body: payment, timestamp: Date()))
            #expect(answer.status == .noContent, "\(answer.bodyText)")
            #expect(try await api.state("order-1") == "verified")
            // Same id again: a duplicate, still 204.
            #expect(try await wechat(api, payment, try ProviderTestKit.wechatHeaders(body: payment, timestamp: Date())).status == .noContent)
            #expect(try await api.eventTypes("order-1").filter { $0 == "provider.notified" }.count == 1)
        }
    }

    @Test func forgedOrStaleWeChatPayNotificationsWriteNothing() async throws {
        try await API.run(providers: Self.verifiers) { api in
            try await api.createOrder("order-1", provider: .wechatPay, amount: Self.yuan)
            let body = try ProviderTestKit.wechatBody(resource: ProviderTestKit.wechatPaymentResource())
            let badTag = try ProviderTestKit.wechatBody(resource: ProviderTestKit.wechatPaymentResource(), tamperCiphertext: true)
            let cases: [(String, [UInt8], WeChatPayHeaders)] = [
                ("stale timestamp", body, try ProviderTestKit.wechatHeaders(body: body, timestamp: Date().addingTimeInterval(-600))),
                ("wrong serial", body, try ProviderTestKit.wechatHeaders(body: body, timestamp: Date(), serial: "UNKNOWN")),
                ("wrong key (a probe)", body, try ProviderTestKit.wechatHeaders(body: body, timestamp: Date(), key: ProviderTestKit.otherRSAKey)),
                ("bad tag", badTag, try ProviderTestKit.wechatHeaders(body: badTag, timestamp: Date())),
            ]
            for (name, body, headers) in cases {
                let answer = try await wechat(api, body, headers)
                #expect(answer.status == .forbidden, "\(name): \(answer.bodyText)")
                #expect(answer.json["code"] == "FAIL", "\(name)")
            }
            var missing = HTTPFields()
            missing[HTTPField.Name("Wechatpay-Nonce")!] = "n"
            let noHeaders = try await api.request(.post, "/v1/providers/wechat/notify", token: nil,
                                                  body: String(decoding: body, as: UTF8.self), headers: missing)
            #expect(noHeaders.status == .badRequest)
            #expect(try await api.providerRows() == 0)
            #expect(try await api.eventTypes("order-1").count == 2)
        }
    }

    /// The endpoints take no bearer token, so anyone can send them anything: a body past the limit is refused
    /// before it is verified or read, answered as each provider expects, and writes nothing.
    @Test func bodiesPastTheLimitAreRefusedBeforeVerification() async throws {
        var verifiers = Self.verifiers
        verifiers.appStore = try AppleMessages().verifiers.appStore
        try await API.run(providers: verifiers) { api in
            let oversized = String(repeating: "a", count: 300 * 1024)  // past the 256 KiB body limit
            let apple = try await api.request(.post, "/v1/providers/app-store/notifications", token: nil,
                                              body: "{\"signedPayload\": \"\(oversized)\"}")
            #expect(apple.status == .contentTooLarge)
            #expect(apple.errorCode == "payload_too_large")
            let alipay = try await alipay(api, Array("notify_id=\(oversized)".utf8))
            #expect(alipay.status == .contentTooLarge)
            #expect(alipay.bodyText == "failure")
            let body = Array("{\"id\": \"\(oversized)\"}".utf8)
            let wechat = try await wechat(api, body, try ProviderTestKit.wechatHeaders(body: body, timestamp: Date()))
            #expect(wechat.status == .contentTooLarge)
            #expect(wechat.json["code"] == "FAIL")
            #expect(try await api.providerRows() == 0)
            #expect(try await api.ledger.store.count("events") == 0)
        }
    }
}

extension API {
    /// An Alipay notification as Alipay posts it: a form body, no bearer token.
    func postAlipay(_ body: [UInt8]) async throws -> Answer {
        try await request(.post, "/v1/providers/alipay/notify", token: nil, body: String(decoding: body, as: UTF8.self),
                          contentType: "application/x-www-form-urlencoded")
    }

    /// A WeChat Pay notification as WeChat Pay posts it: JSON, with its four signed `Wechatpay-*` headers.
    func postWeChat(_ body: [UInt8], _ headers: WeChatPayHeaders) async throws -> Answer {
        var fields = HTTPFields()
        fields[HTTPField.Name("Wechatpay-Timestamp")!] = headers.timestamp
        fields[HTTPField.Name("Wechatpay-Nonce")!] = headers.nonce
        fields[HTTPField.Name("Wechatpay-Signature")!] = headers.signature
        fields[HTTPField.Name("Wechatpay-Serial")!] = headers.serial
        return try await request(.post, "/v1/providers/wechat/notify", token: nil, body: String(decoding: body, as: UTF8.self),
                                 headers: fields)
    }
}
