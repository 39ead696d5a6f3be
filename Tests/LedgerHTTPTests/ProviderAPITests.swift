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

extension API {
    func notify(appStore jws: String) async throws -> Answer {
        try await request(.post, "/v1/providers/app-store/notifications", token: nil,
                          body: JSONValue.object(["signedPayload": .string(jws)]).canonicalJSON)
    }

    func createOrder(_ orderId: String, provider: Provider = .appStore, amount: Money = Money(value: 499, currency: "USD"),
                     productId: String = "gems.100", queued: Bool = true) async throws {
        var events: [JSONValue] = [[
            "eventId": .string(UUID().uuidString), "type": "order.created",
            "data": ["accountId": "acct-1", "productId": .string(productId), "amount": ["value": .int(amount.value), "currency": .string(amount.currency)],
                     "provider": .string(provider.rawValue)],
        ]]
        if queued { events.append(["eventId": .string(UUID().uuidString), "type": "payment.queued", "data": [:]]) }
        let answer = try await post(orderId, ["events": .array(events)])
        #expect(answer.status == .created, "\(answer.bodyText)")
    }

    func state(_ orderId: String) async throws -> String? {
        if case .string(let state)? = try await get("/v1/orders/\(orderId)").json["state"] { state } else { nil }
    }

    func eventTypes(_ orderId: String) async throws -> [String] {
        try await get("/v1/orders/\(orderId)/history").json["events"]?.elements.compactMap {
            if case .string(let type)? = $0["type"] { type } else { nil }
        } ?? []
    }

    func anomalies(_ kind: String) async throws -> [JSONValue] {
        try await get("/v1/anomalies?kind=\(kind)&olderThan=0s").json["anomalies"]?.elements ?? []
    }

    func providerRows() async throws -> Int { try await ledger.store.count("provider_messages") }
}

@Suite("App Store notifications: verified, recorded on their order, idempotent, never dropped")
struct AppStoreNotificationAPITests {
    @Test func aPurchaseTheClientNeverReportedAppearsWithinOneRequest() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            let answer = try await api.notify(appStore: try apple.notification("ONE_TIME_CHARGE", orderId: "order-1"))
            #expect(answer.status == .ok, "\(answer.bodyText)")
            #expect(answer.json["outcome"] == "recorded")
            #expect(answer.json["followed"] == ["receipt.received", "receipt.verified"])
            #expect(try await api.state("order-1") == "verified")

            let history = try await api.get("/v1/orders/order-1/history").json["events"]?.elements ?? []
            let fact = history.first { $0["type"] == "provider.notified" }
            #expect(fact?["actor"] == "provider:app_store")
            #expect(fact?["data"]?["effect"] == "payment")
            #expect(fact?["data"]?["amount"] == ["value": 499, "currency": "USD"])
            #expect(fact?["data"]?["evidence"]?["signedPayload"] != nil)

            let paid = try await api.anomalies("paid_not_granted")
            #expect(paid.map { $0["orderId"] } == ["order-1"])
            #expect(try await LedgerDatabase(client: api.ledger.client).operations.verify().passed)
        }
    }

    /// Apple's payment at 4991 milliunits (499.1 cents) for a 4.99 USD order: genuine, so recorded; not the order's
    /// amount, so not applied, said in the answer and listed for finance.
    @Test func aPaymentPricedInFractionsOfACentIsRecordedNotAppliedAndListed() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            let answer = try await api.notify(appStore: try apple.notification("ONE_TIME_CHARGE", orderId: "order-1", price: 4991))
            #expect(answer.status == .ok, "\(answer.bodyText)")
            #expect(answer.json["outcome"] == "recorded")
            #expect(answer.json["followed"] == [])
            #expect(answer.json["refusal"]?["code"] == "amount_mismatch")
            #expect(try await api.state("order-1") == "payment_queued")
            let history = try await api.get("/v1/orders/order-1/history").json["events"]?.elements ?? []
            let fact = history.first { $0["type"] == "provider.notified" }
            #expect(fact?["data"]?["unconvertedPrice"] == ["milliunits": 4991, "quantity": 1, "currency": "USD"])
            #expect(try await api.anomalies("amount_mismatch").map { $0["orderId"] } == ["order-1"])
            #expect(try await LedgerDatabase(client: api.ledger.client).operations.verify().passed)
        }
    }

    @Test func aRetryOfTheSameNotificationRecordsNothingNew() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            let jws = try apple.notification("ONE_TIME_CHARGE", orderId: "order-1")
            #expect(try await api.notify(appStore: jws).json["outcome"] == "recorded")
            let events = try await api.ledger.store.count("events")
            let retry = try await api.notify(appStore: jws)
            #expect(retry.status == .ok)
            #expect(retry.json["outcome"] == "duplicate")
            #expect(try await api.ledger.store.count("events") == events)
        }
    }

    @Test func aNotificationMatchingNoOrderIsKeptAsAnAnomaly() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            let jws = try apple.notification("ONE_TIME_CHARGE", orderId: "never-created")
            let answer = try await api.notify(appStore: jws)
            #expect(answer.status == .ok)
            #expect(answer.json["outcome"] == "unmatched")
            #expect(try await api.ledger.store.count("events") == 0)
            let unknown = try await api.anomalies("unknown_provider_transaction")
            #expect(unknown.count == 1)
            #expect(unknown.first?["state"] == "unmatched")
            // Kept once: Apple's retry is a duplicate.
            #expect(try await api.notify(appStore: jws).json["outcome"] == "duplicate")
            #expect(try await api.providerRows() == 1)
        }
    }

    /// A refund delivered before the purchase it refunds ends where in-order delivery ends: refunded.
    @Test func aRefundBeforeThePurchaseEndsInTheSameState() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            let purchaseAt = Date().addingTimeInterval(-120), refundAt = Date().addingTimeInterval(-60)
            for (orderId, refundFirst) in [("in-order", false), ("refund-first", true)] {
                try await api.createOrder(orderId)
                let purchase = try apple.notification("ONE_TIME_CHARGE", orderId: orderId, transactionId: "tx-\(orderId)", signedDate: purchaseAt)
                let refund = try apple.notification("REFUND", orderId: orderId, transactionId: "tx-\(orderId)", signedDate: refundAt)
                for jws in refundFirst ? [refund, purchase] : [purchase, refund] {
                    #expect(try await api.notify(appStore: jws).status == .ok)
                }
            }
            #expect(try await api.state("in-order") == "refunded")
            #expect(try await api.state("refund-first") == "refunded")
            #expect(try await LedgerDatabase(client: api.ledger.client).operations.verify().passed)
        }
    }

    @Test func refundAfterGrantIsListedAndItsReversalRestoresTheGrant() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            #expect(try await api.notify(appStore: try apple.notification("ONE_TIME_CHARGE", orderId: "order-1")).status == .ok)
            let grant = try await api.post("order-1", [
                "eventId": .string(UUID().uuidString), "type": "order.granted",
                "data": ["transactionId": "2000000000000001", "accountId": "acct-1"],
            ])
            #expect(grant.status == .created, "\(grant.bodyText)")
            let refund = try await api.notify(appStore: try apple.notification("REFUND", orderId: "order-1", signedDate: Date().addingTimeInterval(-2)))
            #expect(refund.json["followed"] == ["order.refunded"])
            #expect(try await api.anomalies("refunded_at_provider").map { $0["orderId"] } == ["order-1"])
            let reversal = try await api.notify(appStore: try apple.notification("REFUND_REVERSED", orderId: "order-1"))
            #expect(reversal.json["followed"] == ["order.refund_reversed"])
            #expect(try await api.state("order-1") == "granted")
        }
    }

    @Test func consumptionRequestsAreListedForFinanceAndTestNotificationsRecordNothing() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            #expect(try await api.notify(appStore: try apple.notification("CONSUMPTION_REQUEST", orderId: "order-1")).status == .ok)
            #expect(try await api.anomalies("consumption_request").map { $0["orderId"] } == ["order-1"])
            #expect(try await api.notify(appStore: try apple.notification("SOMETHING_NEW", orderId: "order-1")).json["outcome"] == "recorded")
            let test = try await api.notify(appStore: try apple.notification("TEST", orderId: "order-1"))
            #expect(test.json["outcome"] == "test")
            #expect(try await api.eventTypes("order-1").filter { $0 == "provider.notified" }.count == 2)
        }
    }

    /// Each forged or mismatched message: 403 `provider_message_refused` naming the failed check, and no row anywhere.
    @Test func forgedOrForeignMessagesWriteNothing() async throws {
        let apple = try AppleMessages()
        let stranger = try ProviderTestKit.CA(name: "Stranger")
        let unmarked = try ProviderTestKit.CA(name: "Unmarked", leafMarker: false)
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            let valid = try apple.notification("ONE_TIME_CHARGE", orderId: "order-1")
            let parts = valid.split(separator: ".").map(String.init)
            let tamperedPayload = [parts[0], ProviderTestKit.base64URL(Data("{\"notificationType\":\"REFUND\"}".utf8)), parts[2]]
                .joined(separator: ".")
            let tamperedHeader = [ProviderTestKit.base64URL(Data("{\"alg\":\"none\"}".utf8)), parts[1], parts[2]].joined(separator: ".")
            let cases: [(String, String)] = [
                ("tampered payload", tamperedPayload),
                ("tampered header", tamperedHeader),
                ("untrusted root", try apple.notification("ONE_TIME_CHARGE", orderId: "order-1", by: stranger)),
                ("missing leaf OID", try apple.notification("ONE_TIME_CHARGE", orderId: "order-1", by: unmarked)),
                ("wrong bundle id", try apple.notification("ONE_TIME_CHARGE", orderId: "order-1", bundleId: "com.other.app")),
                ("signed in the future", try apple.notification("ONE_TIME_CHARGE", orderId: "order-1", signedDate: Date().addingTimeInterval(3600))),
            ]
            let events = try await api.ledger.store.count("events")
            for (name, jws) in cases {
                let answer = try await api.notify(appStore: jws)
                #expect(answer.status == .forbidden, "\(name): \(answer.bodyText)")
                #expect(answer.errorCode == "provider_message_refused", "\(name)")
            }
            #expect(try await api.ledger.store.count("events") == events)
            #expect(try await api.providerRows() == 0)
            #expect(try await api.state("order-1") == "payment_queued")

            let malformed = try await api.request(.post, "/v1/providers/app-store/notifications", token: nil, body: "{\"payload\": 1}")
            #expect(malformed.status == .badRequest)
        }
    }

    @Test func anUnconfiguredProviderAnswers501() async throws {
        try await API.run { api in
            let apple = try await api.request(.post, "/v1/providers/app-store/notifications", token: nil, body: "{\"signedPayload\": \"x\"}")
            #expect(apple.status == .notImplemented)
            #expect(apple.errorCode == "provider_not_configured")
            let alipay = try await api.request(.post, "/v1/providers/alipay/notify", token: nil, body: "a=b", contentType: "application/x-www-form-urlencoded")
            #expect(alipay.status == .notImplemented)
            #expect(alipay.bodyText == "failure")
            let wechat = try await api.request(.post, "/v1/providers/wechat/notify", token: nil, body: "{}")
            #expect(wechat.status == .notImplemented)
            #expect(wechat.json["code"] == "FAIL")
        }
    }

    /// Apple re-delivers while a client retries: the same notification many times at once, and other notifications
    /// of the same order and transaction, race on one order. Each is recorded once, the follow-up once, and the
    /// ledger verifies.
    @Test func concurrentDeliveriesOnOneOrderRecordEachMessageOnce() async throws {
        let apple = try AppleMessages()
        try await API.run(providers: apple.verifiers) { api in
            try await api.createOrder("order-1")
            let purchase = try apple.notification("ONE_TIME_CHARGE", orderId: "order-1", signedDate: Date().addingTimeInterval(-30))
            let others = try (0..<4).map { _ in try apple.notification("CONSUMPTION_REQUEST", orderId: "order-1") }
            let deliveries = Array(repeating: purchase, count: 8) + others + others
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for jws in deliveries { group.addTask { try await api.notify(appStore: jws).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .ok || $0 == .serviceUnavailable }, "\(statuses)")
            // What a 503 asked Apple to retry, retried once more.
            for jws in deliveries { #expect(try await api.notify(appStore: jws).status == .ok) }
            let types = try await api.eventTypes("order-1")
            #expect(types.filter { $0 == "provider.notified" }.count == 5)
            #expect(types.filter { $0 == "receipt.verified" }.count == 1)
            #expect(try await api.providerRows() == 5)
            #expect(try await LedgerDatabase(client: api.ledger.client).operations.verify().passed)
        }
    }
}
