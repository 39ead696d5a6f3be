import Foundation
import LedgerCore
import Testing

/// Posted data for each event type: the least it needs, and every field it may have.
enum PostedData {
    static let minimal: [EventType: JSONValue] = [
        .orderCreated: [
            "accountId": "acct-1", "productId": "gems.100", "amount": ["value": 499, "currency": "USD"],
            "provider": "app_store",
        ],
        .paymentQueued: [:],
        .receiptReceived: ["transactionId": "2000000123"],
        .receiptVerified: [
            "transactionId": "2000000123", "productId": "gems.100", "environment": "production",
            "purchasedAt": "2026-11-22T10:00:00Z",
        ],
        .verificationFailed: ["code": "21005", "retryable": true],
        .orderGranted: ["transactionId": "2000000123", "accountId": "acct-1"],
        .orderFinished: [:],
        .orderCancelled: ["reason": "user_cancelled"],
        .orderRefunded: ["transactionId": "2000000123"],
        .refundReversed: ["transactionId": "2000000123"],
        .providerNotified: [
            "provider": "app_store", "notificationId": "5d2b3a1e-0000-4000-8000-000000000001",
            "notificationType": "ONE_TIME_CHARGE", "effect": "payment", "signedAt": "2026-11-22T10:00:00Z",
            "evidence": ["signedPayload": "header.payload.signature"],
        ],
    ]

    static let complete: [EventType: JSONValue] = [
        .orderCreated: [
            "accountId": "acct-1", "productId": "gems.100", "quantity": 2, "amount": ["value": 998, "currency": "USD"],
            "provider": "wechat_pay", "environment": "sandbox", "appAccountToken": "6f1c2e9a-0b7d-4c3e-9a51-2d8f0e4b7c61",
        ],
        .paymentQueued: ["appAccountToken": "6f1c2e9a-0b7d-4c3e-9a51-2d8f0e4b7c61", "applicationUsername": "order-1"],
        .receiptReceived: [
            "transactionId": "2000000123", "originalTransactionId": "2000000100", "source": "notification",
            "submittedBy": "svc:notifications",
            "receiptSha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "signedTransaction": "header.payload.signature",
        ],
        .receiptVerified: [
            "transactionId": "2000000123", "productId": "gems.100", "quantity": 2, "environment": "sandbox",
            "purchasedAt": "2026-11-22T10:00:00.250Z", "price": ["value": 998, "currency": "USD"],
        ],
        .verificationFailed: ["code": "21003", "retryable": false, "message": "receipt could not be authenticated"],
        .orderGranted: ["transactionId": "2000000123", "accountId": "acct-1", "items": ["gems": 200, "bonus": [1, 2]]],
        .orderFinished: ["by": "server"],
        .orderCancelled: ["reason": "expired"],
        .orderRefunded: [
            "transactionId": "2000000123", "amount": ["value": 100, "currency": "USD"], "reason": "REFUND",
            "refundedAt": "2026-11-23T01:02:03Z",
        ],
        .refundReversed: ["transactionId": "2000000123"],
        .providerNotified: [
            "provider": "app_store", "notificationId": "5d2b3a1e-0000-4000-8000-000000000001",
            "notificationType": "REFUND", "subtype": "UNKNOWN", "effect": "refund", "signedAt": "2026-11-22T10:00:00.250Z",
            "transactionId": "2000000123", "originalTransactionId": "2000000100", "productId": "gems.100",
            "amount": ["value": 499, "currency": "USD"], "environment": "sandbox",
            "appAccountToken": "6f1c2e9a-0b7d-4c3e-9a51-2d8f0e4b7c61", "purchasedAt": "2026-11-22T09:59:00Z",
            "revocationReason": "1", "evidence": ["signedPayload": "header.payload.signature"],
        ],
    ]

    /// Fields that must be present, per type.
    static let required: [EventType: [String]] = [
        .orderCreated: ["accountId", "productId", "amount", "provider"],
        .paymentQueued: [],
        .receiptReceived: ["transactionId"],
        .receiptVerified: ["transactionId", "productId", "environment", "purchasedAt"],
        .verificationFailed: ["code", "retryable"],
        .orderGranted: ["transactionId", "accountId"],
        .orderFinished: [],
        .orderCancelled: ["reason"],
        .orderRefunded: ["transactionId"],
        .refundReversed: ["transactionId"],
        .providerNotified: ["provider", "notificationId", "notificationType", "effect", "signedAt", "evidence"],
    ]

    /// `data` of `type` with `changes` applied (`nil` removes the member).
    static func minimal(_ type: EventType, _ changes: [String: JSONValue?] = [:]) -> JSONValue {
        edit(minimal[type]!, changes)
    }

    static func edit(_ data: JSONValue, _ changes: [String: JSONValue?]) -> JSONValue {
        guard case .object(var members) = data else { return data }
        for (key, value) in changes { members[key] = value }
        return .object(members)
    }
}

/// Parses, expecting a refusal; returns it.
func refusal(_ type: EventType, _ data: JSONValue) -> EventValidationError? {
    do {
        _ = try OrderEvent(type: type.rawValue, data: data)
        return nil
    } catch {
        return error
    }
}

@Suite("Parsing events: happy paths, defaults and round trips")
struct EventParsingTests {
    @Test func minimalEventsGetTheirDefaults() throws {
        let created = try OrderEvent(type: "order.created", data: PostedData.minimal[.orderCreated]!)
        #expect(created == .created(OrderCreated(
            accountId: "acct-1", productId: "gems.100", quantity: 1, amount: Money(value: 499, currency: "USD"),
            provider: .appStore, environment: .production, appAccountToken: nil)))
        #expect(created.data == [
            "accountId": "acct-1", "productId": "gems.100", "quantity": 1, "amount": ["value": 499, "currency": "USD"],
            "provider": "app_store", "environment": "production",
        ])

        let queued = try OrderEvent(type: "payment.queued", data: [:])
        #expect(queued == .paymentQueued(PaymentQueued()))
        #expect(queued.data == [:])

        let receipt = try OrderEvent(type: "receipt.received", data: PostedData.minimal[.receiptReceived]!)
        #expect(receipt == .receiptReceived(ReceiptReceived(transactionId: "2000000123", source: .client)))
        #expect(receipt.data == ["transactionId": "2000000123", "source": "client"])

        let verified = try OrderEvent(type: "receipt.verified", data: PostedData.minimal[.receiptVerified]!)
        #expect(verified.data == [
            "transactionId": "2000000123", "productId": "gems.100", "quantity": 1, "environment": "production",
            "purchasedAt": "2026-11-22T10:00:00Z",
        ])

        let failed = try OrderEvent(type: "verification.failed", data: PostedData.minimal[.verificationFailed]!)
        #expect(failed == .verificationFailed(VerificationFailed(code: "21005", retryable: true)))
        #expect(failed.data == ["code": "21005", "retryable": true])

        let granted = try OrderEvent(type: "order.granted", data: PostedData.minimal[.orderGranted]!)
        #expect(granted == .granted(OrderGranted(transactionId: "2000000123", accountId: "acct-1")))

        let finished = try OrderEvent(type: "order.finished", data: [:])
        #expect(finished == .finished(OrderFinished(by: .client)))
        #expect(finished.data == ["by": "client"])

        let cancelled = try OrderEvent(type: "order.cancelled", data: ["reason": "user_cancelled"])
        #expect(cancelled == .cancelled(OrderCancelled(reason: .userCancelled)))

        let refunded = try OrderEvent(type: "order.refunded", data: PostedData.minimal[.orderRefunded]!)
        #expect(refunded == .refunded(OrderRefunded(transactionId: "2000000123")))
        #expect(refunded.data == ["transactionId": "2000000123"])
    }

    @Test(arguments: EventType.allCases)
    func completeEventsKeepEveryField(type: EventType) throws {
        let posted = PostedData.complete[type]!
        let event = try OrderEvent(type: type.rawValue, data: posted)
        #expect(event.type == type)
        #expect(event.data == posted)
    }

    @Test(arguments: EventType.allCases)
    func storedDataParsesBackToTheSameEvent(type: EventType) throws {
        for posted in [PostedData.minimal[type]!, PostedData.complete[type]!] {
            let event = try OrderEvent(type: type.rawValue, data: posted)
            #expect(try OrderEvent(type: event.type.rawValue, data: event.data) == event)
            let stored = try JSONValue(parsing: Array(event.data.canonicalJSON.utf8))
            #expect(try OrderEvent(type: type.rawValue, data: stored) == event)
        }
    }

    /// What a rebuild reads: the data's JSON text, its members never hashed into a dictionary
    /// (`OrderEvent(storedType:dataText:)`), read as the tree of the same text is.
    @Test(arguments: EventType.allCases)
    func storedDataTextParsesToTheSameEventAsItsTree(type: EventType) throws {
        for posted in [PostedData.minimal[type]!, PostedData.complete[type]!] {
            let event = try OrderEvent(type: type.rawValue, data: posted)
            let text = Array(event.data.canonicalJSON.utf8)
            #expect(try OrderEvent(storedType: type.rawValue, dataText: text) == event)
            #expect(try OrderEvent(storedType: type.rawValue, dataText: Array(" \n".utf8) + text + Array("\t ".utf8)) == event)
        }
    }

    @Test func storedDataTextIsRefusedAsItsTreeIs() throws {
        func refusal(_ type: String, _ text: String) -> String? {
            do {
                _ = try OrderEvent(storedType: type, dataText: Array(text.utf8))
                return nil
            } catch let error as EventValidationError {
                return error.message
            } catch let error as JSONSyntaxError {
                return "JSON: \(error.reason)"
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal("order.refunded", #"{"transactionId":"t-1","colour":"red","size":1}"#)
            == "data.colour is not a field of order.refunded")
        #expect(refusal("order.refunded", #"{"transactionId":"t-1","amount":{"value":1,"currency":"USD","x":1}}"#)
            == "data.amount.x is not a field of an amount")
        #expect(refusal("order.refunded", #"{"amount":null}"#) == "data.transactionId is required")
        for notAnObject in ["[]", #""text""#, "1", "null", "true"] {
            #expect(refusal("order.refunded", notAnObject) == "data must be a JSON object", "\(notAnObject)")
        }
        #expect(refusal("order.refunded", #"{"transactionId":"t-1","transactionId":"t-2"}"#)
            == #"JSON: duplicate member name "transactionId""#)
        #expect(refusal("order.refunded", #"{"transactionId":"t-1",}"#) == "JSON: expected a member name")
        #expect(refusal("order.refunded", #"{"transactionId":"t-1"} {}"#) == "JSON: unexpected text after the value")
        #expect(refusal("order.shipped", "{}") == EventValidationError.unknownEventType("order.shipped").message)
        // Null reads as absent, as in a tree.
        #expect(try OrderEvent(storedType: "order.refunded", dataText: Array(#"{"transactionId":"t-1","reason":null}"#.utf8))
            == .refunded(OrderRefunded(transactionId: "t-1")))
    }

    /// By the rules a stored event was written under: an amount from before `Money.maximumValue` still reads back.
    @Test func storedDataTextIsReadByTheStoredRules() throws {
        let text = #"{"transactionId":"t-1","amount":{"value":\#(Money.maximumValue + 1),"currency":"USD"}}"#
        #expect(throws: EventValidationError.self) {
            try OrderEvent(type: "order.refunded", data: JSONValue(parsing: Array(text.utf8)))
        }
        let stored = try OrderEvent(storedType: "order.refunded", dataText: Array(text.utf8))
        #expect(stored == .refunded(OrderRefunded(transactionId: "t-1", amount: Money(value: Money.maximumValue + 1, currency: "USD"))))
    }

    @Test func eventsNameTheirTransaction() throws {
        for type in EventType.allCases {
            let event = try OrderEvent(type: type.rawValue, data: PostedData.minimal[type]!)
            // A provider's fact names a transaction as evidence, not as a claim on it: it binds nothing.
            let namesOne: Set<EventType> = [.receiptReceived, .receiptVerified, .orderGranted, .orderRefunded, .refundReversed]
            #expect(event.transactionId == (namesOne.contains(type) ? "2000000123" : nil))
        }
    }

    @Test func nullOptionalFieldsAreAbsent() throws {
        let data = PostedData.minimal(.orderCreated, ["quantity": .null, "environment": .null, "appAccountToken": .null])
        let event = try OrderEvent(type: "order.created", data: data)
        #expect(event == (try OrderEvent(type: "order.created", data: PostedData.minimal[.orderCreated]!)))
    }

    @Test func uuidsAreStoredInLowerCase() throws {
        let event = try OrderEvent(type: "payment.queued", data: ["appAccountToken": "6F1C2E9A-0B7D-4C3E-9A51-2D8F0E4B7C61"])
        #expect(event.data == ["appAccountToken": "6f1c2e9a-0b7d-4c3e-9a51-2d8f0e4b7c61"])
    }

    @Test(arguments: [
        ("2026-11-22T21:05:09+08:00", "2026-11-22T13:05:09Z"),
        ("2026-11-22T13:05:09.5Z", "2026-11-22T13:05:09.500Z"),
        ("2026-11-22T13:05:09.123456Z", "2026-11-22T13:05:09.123Z"),
        ("2026-11-22T13:05:09.000Z", "2026-11-22T13:05:09Z"),
        ("2026-11-22t13:05:09.999-00:30", "2026-11-22T13:35:09.999Z"),
    ])
    func timesAreStoredInUTCToTheMillisecond(posted: String, stored: String) throws {
        let data = PostedData.minimal(.receiptVerified, ["purchasedAt": .string(posted)])
        let event = try OrderEvent(type: "receipt.verified", data: data)
        #expect(event.data["purchasedAt"] == .string(stored))
        #expect(try OrderEvent(type: "receipt.verified", data: event.data) == event)
    }

    @Test func eventsMadeInCodeSurviveTheirStoredData() throws {
        let purchasedAt = Date(timeIntervalSince1970: 1_800_000_000.123456)
        let event = OrderEvent.receiptVerified(ReceiptVerified(
            transactionId: "t-1", productId: "p-1", environment: .sandbox, purchasedAt: purchasedAt))
        #expect(try OrderEvent(type: "receipt.verified", data: event.data) == event)
        let refund = OrderEvent.refunded(OrderRefunded(transactionId: "t-1", refundedAt: purchasedAt))
        #expect(try OrderEvent(type: "order.refunded", data: refund.data) == refund)
    }
}

@Suite("Receipts: hashed, never kept")
struct ReceiptHashingTests {
    @Test func receiptIsReplacedByItsSha256() throws {
        let event = try OrderEvent(type: "receipt.received", data: ["transactionId": "t-1", "receipt": "abc"])
        #expect(event.data == [
            "transactionId": "t-1", "source": "client",
            "receiptSha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ])
        #expect(!event.data.canonicalJSON.contains("\"receipt\""))
    }

    @Test func givenSha256IsKeptInLowerCase() throws {
        let event = try OrderEvent(type: "receipt.received", data: [
            "transactionId": "t-1", "receiptSha256": "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",
        ])
        #expect(event.data["receiptSha256"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func receiptOf64KiBIsAcceptedAndOneByteMoreRefused() {
        let limit = String(repeating: "A", count: 65_536)
        #expect(refusal(.receiptReceived, ["transactionId": "t-1", "receipt": .string(limit)]) == nil)
        #expect(refusal(.receiptReceived, ["transactionId": "t-1", "receipt": .string(limit + "A")])?.field == "data.receipt")
    }

    @Test func emptyReceiptIsRefused() {
        #expect(refusal(.receiptReceived, ["transactionId": "t-1", "receipt": ""])?.field == "data.receipt")
    }

    @Test func receiptAndSha256TogetherAreRefused() {
        let data: JSONValue = [
            "transactionId": "t-1", "receipt": "abc",
            "receiptSha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ]
        #expect(refusal(.receiptReceived, data)?.field == "data.receipt")
    }

    @Test(arguments: ["abc", String(repeating: "g", count: 64), String(repeating: "a", count: 63), String(repeating: "a", count: 65)])
    func malformedSha256IsRefused(hash: String) {
        #expect(refusal(.receiptReceived, ["transactionId": "t-1", "receiptSha256": .string(hash)])?.field
            == "data.receiptSha256")
    }
}

extension EventValidationError {
    /// The field an `invalidField` names.
    var field: String? {
        if case .invalidField(let field, _) = self { return field }
        return nil
    }
}
