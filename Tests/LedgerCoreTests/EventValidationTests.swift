import Foundation
import LedgerCore
import Testing

@Suite("Parsing events: every refusal names the field")
struct EventValidationTests {
    static let requiredFields: [(EventType, String)] = PostedData.required
        .flatMap { type, fields in fields.map { (type, $0) } }
        .sorted { ($0.0.rawValue, $0.1) < ($1.0.rawValue, $1.1) }

    @Test(arguments: requiredFields)
    func missingRequiredFieldIsNamed(type: EventType, field: String) {
        let error = refusal(type, PostedData.minimal(type, [field: nil]))
        #expect(error == .invalidField(field: "data.\(field)", message: "data.\(field) is required"))
        #expect(refusal(type, PostedData.minimal(type, [field: .null]))?.field == "data.\(field)")
    }

    @Test(arguments: EventType.allCases)
    func unknownFieldIsNamed(type: EventType) {
        let error = refusal(type, PostedData.minimal(type, ["colour": "blue"]))
        #expect(error == .invalidField(field: "data.colour", message: "data.colour is not a field of \(type.rawValue)"))
    }

    @Test func unknownFieldInsideAnAmountIsNamed() {
        let data = PostedData.minimal(.orderCreated, ["amount": ["value": 1, "currency": "USD", "cents": 1]])
        #expect(refusal(.orderCreated, data)?.field == "data.amount.cents")
    }

    static let mistyped: [(EventType, String, JSONValue)] = [
        (.orderCreated, "accountId", 42),
        (.orderCreated, "quantity", "2"),
        (.orderCreated, "amount", 499),
        (.orderCreated, "provider", "paypal"),
        (.orderCreated, "environment", true),
        (.orderCreated, "appAccountToken", "not-a-uuid"),
        (.paymentQueued, "applicationUsername", ["order-1"]),
        (.receiptReceived, "source", "fax"),
        (.receiptReceived, "receipt", 7),
        (.receiptVerified, "purchasedAt", 1_800_000_000),
        (.receiptVerified, "price", "4.99 USD"),
        (.verificationFailed, "retryable", "yes"),
        (.verificationFailed, "code", 21005),
        (.orderGranted, "items", ["gems", 100]),
        (.orderFinished, "by", "robot"),
        (.orderCancelled, "reason", "bored"),
        (.orderRefunded, "reason", false),
    ]

    @Test(arguments: mistyped)
    func mistypedFieldIsNamed(type: EventType, field: String, value: JSONValue) {
        #expect(refusal(type, PostedData.minimal(type, [field: value]))?.field == "data.\(field)")
    }

    @Test(arguments: [JSONValue.null, "text", 1, ["a"], true])
    func dataThatIsNotAnObjectIsRefused(data: JSONValue) {
        #expect(refusal(.orderFinished, data) == .invalidField(field: "data", message: "data must be a JSON object"))
    }

    @Test func unknownEventTypeIsRefusedAsSuch() {
        #expect(throws: EventValidationError.unknownEventType("order.teleported")) {
            try OrderEvent(type: "order.teleported", data: [:])
        }
        let error = EventValidationError.unknownEventType("order.teleported")
        #expect(error.code == "unknown_event_type")
        #expect(error.message.hasPrefix("order.teleported is not an event type"))
        #expect(EventValidationError.invalidField(field: "data", message: "data must be a JSON object").code == "invalid_request")
    }

    static let badIds = ["", String(repeating: "a", count: 129), "acct 1", "acct/1", "äcct", "💳", "acct\n"]

    @Test(arguments: badIds)
    func badIdsAreRefused(id: String) {
        for field in ["accountId", "productId"] {
            #expect(refusal(.orderCreated, PostedData.minimal(.orderCreated, [field: .string(id)]))?.field == "data.\(field)")
        }
        for field in ["transactionId", "originalTransactionId", "submittedBy"] {
            #expect(refusal(.receiptReceived, PostedData.minimal(.receiptReceived, [field: .string(id)]))?.field
                == "data.\(field)")
        }
    }

    @Test func idOf128CharactersFromTheWholeAlphabetIsAccepted() {
        let id = "Az09._:-" + String(repeating: "x", count: 120)
        #expect(refusal(.orderGranted, ["transactionId": .string(id), "accountId": "a"]) == nil)
    }

    @Test(arguments: [JSONValue.int(0), 1001, -1, 1.5])
    func quantityOutsideOneToAThousandIsRefused(quantity: JSONValue) {
        let error = refusal(.orderCreated, PostedData.minimal(.orderCreated, ["quantity": quantity]))
        #expect(error == .invalidField(field: "data.quantity", message: "data.quantity must be an integer from 1 to 1000"))
        #expect(refusal(.receiptVerified, PostedData.minimal(.receiptVerified, ["quantity": quantity]))?.field
            == "data.quantity")
    }

    @Test func quantityOfAThousandIsAccepted() {
        #expect(refusal(.orderCreated, PostedData.minimal(.orderCreated, ["quantity": 1000])) == nil)
    }

    @Test(arguments: [JSONValue.int(-1), 1.5, 1e19, "499", .int(Money.maximumValue + 1)])
    func amountThatIsNotWholeNonNegativeMinorUnitsWithinTheBoundIsRefused(value: JSONValue) {
        let data = PostedData.minimal(.orderCreated, ["amount": ["value": value, "currency": "USD"]])
        #expect(refusal(.orderCreated, data) == .invalidField(
            field: "data.amount.value", message: "data.amount.value must be a whole number of minor units from 0 to 1000000000000"))
    }

    @Test func freeOrderIsAccepted() {
        let data = PostedData.minimal(.orderCreated, ["amount": ["value": 0, "currency": "USD"]])
        #expect(refusal(.orderCreated, data) == nil)
    }

    @Test(arguments: ["usd", "US", "USDT", "U$D", "ÜSD", ""])
    func currencyThatIsNotThreeUpperCaseLettersIsRefused(currency: String) {
        let data = PostedData.minimal(.orderRefunded, ["amount": ["value": 1, "currency": .string(currency)]])
        #expect(refusal(.orderRefunded, data) == .invalidField(
            field: "data.amount.currency", message: "data.amount.currency must be 3 upper-case letters (ISO 4217)"))
    }

    @Test func amountWithoutCurrencyIsRefused() {
        let data = PostedData.minimal(.receiptVerified, ["price": ["value": 1]])
        #expect(refusal(.receiptVerified, data)?.field == "data.price.currency")
    }

    @Test func stringsWithNulAreRefused() {
        #expect(refusal(.verificationFailed, ["code": "21005", "retryable": true, "message": "a\u{0}b"])?.field
            == "data.message")
        #expect(refusal(.orderGranted, ["transactionId": "t", "accountId": "a", "items": ["note": "a\u{0}b"]])?.field
            == "data.items")
    }

    @Test(arguments: ["", String(repeating: "9", count: 65), "210\u{7}05"])
    func verificationCodeMustBeOneToSixtyFourPrintableCharacters(code: String) {
        #expect(refusal(.verificationFailed, ["code": .string(code), "retryable": true])?.field == "data.code")
    }

    @Test func overlongTextsAreRefused() {
        #expect(refusal(.paymentQueued, ["applicationUsername": .string(String(repeating: "u", count: 257))])?.field
            == "data.applicationUsername")
        #expect(refusal(.paymentQueued, ["applicationUsername": ""])?.field == "data.applicationUsername")
        #expect(refusal(.verificationFailed, [
            "code": "x", "retryable": false, "message": .string(String(repeating: "m", count: 1025)),
        ])?.field == "data.message")
        #expect(refusal(.orderRefunded, ["transactionId": "t", "reason": .string(String(repeating: "r", count: 257))])?.field
            == "data.reason")
    }

    @Test(arguments: ["2026-11-22T10:00:00", "2026-11-22", "yesterday", "2026-02-30T10:00:00Z", "2026-11-22T24:00:00Z"])
    func timeWithoutAnOffsetOrOutOfRangeIsRefused(time: String) {
        let data = PostedData.minimal(.receiptVerified, ["purchasedAt": .string(time)])
        #expect(refusal(.receiptVerified, data)?.field == "data.purchasedAt")
        #expect(refusal(.orderRefunded, ["transactionId": "t", "refundedAt": .string(time)])?.field == "data.refundedAt")
    }

    @Test func firstBadFieldInDeclarationOrderIsReported() {
        let data: JSONValue = ["accountId": "", "productId": "", "amount": 1, "provider": "x"]
        #expect(refusal(.orderCreated, data)?.field == "data.accountId")
    }

    @Test func messagesNameTheField() {
        let error = refusal(.orderCreated, PostedData.minimal(.orderCreated, ["provider": "paypal"]))
        #expect(error?.message == "data.provider must be one of app_store, alipay, wechat_pay, other")
    }
}

/// Lengths count Unicode scalars, not graphemes: "a" and 50,000 combining accents (100,001 bytes) used to pass
/// `code`'s 1–64 characters as one character.
@Suite("Parsing events: lengths and ids")
struct LengthAndIdRulesTests {
    @Test func combiningMarksCountAsCharacters() {
        let code = "a" + String(repeating: "\u{0301}", count: 50_000)
        let data: JSONValue = ["code": .string(code), "retryable": true]
        #expect(throws: EventValidationError.invalidField(field: "data.code", message: "data.code must be 1 to 64 characters long")) {
            try OrderEvent(type: "verification.failed", data: data)
        }
        let accented: JSONValue = ["code": .string("e" + String(repeating: "\u{0301}", count: 63)), "retryable": true]
        #expect(throws: Never.self) { try OrderEvent(type: "verification.failed", data: accented) }
    }

    @Test(arguments: [".", "..", "..."])
    func dotsAloneAreNoOrderId(id: String) {
        #expect(!Identifier.isValidOrderId(id))
        #expect(Identifier.isValid(id), "ids inside stored events keep the rule they were stored under")
        #expect(Identifier.isValidOrderId("a.b") && Identifier.isValidOrderId(".a"))
    }
}
