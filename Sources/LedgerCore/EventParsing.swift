import Foundation

extension OrderEvent {
    /// Parses and validates a posted event: a known type, data an object with only that type's fields, every field
    /// well-formed. Throws naming the first bad field.
    public init(type: String, data: JSONValue) throws(EventValidationError) {
        try self.init(type: type, data: data, rules: .new)
    }

    /// Parses an event read back from the log, by the rules it was written under: rules only ever tighten for new
    /// events (an amount's bound, lengths counted in Unicode scalars), and an event written before must still read
    /// back, since it can never be changed.
    public init(storedType type: String, data: JSONValue) throws(EventValidationError) {
        try self.init(type: type, data: data, rules: .stored)
    }

    /// Parses an event read back from the log, as `init(storedType:data:)`, straight from its data's JSON text: the
    /// data's members are read as a list, never hashed into a dictionary (a rebuild reads every stored event).
    /// Throws a `JSONSyntaxError` when the text is not JSON, else an `EventValidationError`.
    public init(storedType type: String, dataText: [UInt8]) throws {
        guard let eventType = EventType(rawValue: type) else { throw EventValidationError.unknownEventType(type) }
        guard let members = try JSONParser.parseMembers(dataText) else { throw DataFields.notAnObject("data") }
        try self.init(
            eventType,
            DataFields(members: members, path: "data", owner: type, allowing: Self.fieldNames(of: eventType), rules: .stored))
    }

    init(type: String, data: JSONValue, rules: DataFields.Rules) throws(EventValidationError) {
        guard let eventType = EventType(rawValue: type) else { throw .unknownEventType(type) }
        try self.init(eventType, DataFields(data, path: "data", owner: type, allowing: Self.fieldNames(of: eventType), rules: rules))
    }

    private init(_ eventType: EventType, _ fields: DataFields) throws(EventValidationError) {
        switch eventType {
        case .orderCreated: self = .created(try OrderCreated(fields))
        case .paymentQueued: self = .paymentQueued(try PaymentQueued(fields))
        case .receiptReceived: self = .receiptReceived(try ReceiptReceived(fields))
        case .receiptVerified: self = .receiptVerified(try ReceiptVerified(fields))
        case .verificationFailed: self = .verificationFailed(try VerificationFailed(fields))
        case .orderGranted: self = .granted(try OrderGranted(fields))
        case .orderFinished: self = .finished(try OrderFinished(fields))
        case .orderCancelled: self = .cancelled(try OrderCancelled(fields))
        case .orderRefunded: self = .refunded(try OrderRefunded(fields))
        case .refundReversed: self = .refundReversed(try RefundReversed(fields))
        case .providerNotified: self = .providerNotified(try ProviderNotified(fields))
        }
    }

    /// The members each event type's data may have (`receipt` is read, hashed and dropped). Built once: made for
    /// every event parsed, they were 3 % of a rebuild.
    static func fieldNames(of type: EventType) -> [String] { allowedFieldNames[type] ?? [] }

    private static let allowedFieldNames = Dictionary(
        EventType.allCases.map { ($0, listedFieldNames(of: $0)) }, uniquingKeysWith: { first, _ in first })

    private static func listedFieldNames(of type: EventType) -> [String] {
        switch type {
        case .orderCreated: ["accountId", "productId", "quantity", "amount", "provider", "environment", "appAccountToken"]
        case .paymentQueued: ["appAccountToken", "applicationUsername"]
        case .receiptReceived:
            ["transactionId", "originalTransactionId", "source", "submittedBy", "receipt", "receiptSha256", "signedTransaction",
             "otherPurchases"]
        case .receiptVerified:
            ["transactionId", "productId", "quantity", "environment", "purchasedAt", "price", "unconvertedPrice", "appAccountToken"]
        case .verificationFailed: ["code", "retryable", "message"]
        case .orderGranted: ["transactionId", "accountId", "items"]
        case .orderFinished: ["by"]
        case .orderCancelled: ["reason"]
        case .orderRefunded: ["transactionId", "amount", "reason", "refundedAt"]
        case .refundReversed: ["transactionId"]
        case .providerNotified:
            ["provider", "notificationId", "notificationType", "subtype", "effect", "signedAt", "transactionId",
             "originalTransactionId", "productId", "amount", "unconvertedPrice", "environment", "appAccountToken", "purchasedAt",
             "revocationReason", "evidence"]
        }
    }
}

// Each payload reads its fields in declaration order, so the first bad field is the one reported.

extension OrderCreated {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(
            accountId: try data.required("accountId", data.id),
            productId: try data.required("productId", data.id),
            quantity: try data.quantity("quantity"),
            amount: try data.required("amount", data.money),
            provider: try data.required("provider") { key throws(EventValidationError) in try data.choice(key, Provider.self) },
            environment: try data.choice("environment", PurchaseEnvironment.self) ?? .production,
            appAccountToken: try data.uuid("appAccountToken"))
    }
}

extension PaymentQueued {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(
            appAccountToken: try data.uuid("appAccountToken"),
            applicationUsername: try data.text("applicationUsername", length: 1...256))
    }
}

extension ReceiptReceived {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(
            transactionId: try data.required("transactionId", data.id),
            originalTransactionId: try data.id("originalTransactionId"),
            source: try data.choice("source", ReceiptSource.self) ?? .client,
            submittedBy: try data.id("submittedBy"),
            receiptSha256: try data.receiptSha256(),
            signedTransaction: try data.text("signedTransaction", length: 1...65_536, printable: true),
            otherPurchases: try data.receiptPurchases("otherPurchases"))
    }
}

extension ReceiptVerified {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(
            transactionId: try data.required("transactionId", data.id),
            productId: try data.required("productId", data.id),
            quantity: try data.quantity("quantity"),
            environment: try data.required("environment") { key throws(EventValidationError) in
                try data.choice(key, PurchaseEnvironment.self)
            },
            purchasedAt: try data.required("purchasedAt", data.time),
            price: try data.money("price"),
            unconvertedPrice: try data.unconvertedPrice("unconvertedPrice"),
            appAccountToken: try data.uuid("appAccountToken"))
    }
}

extension VerificationFailed {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(
            code: try data.required("code") { key throws(EventValidationError) in
                try data.text(key, length: 1...64, printable: true)
            },
            retryable: try data.required("retryable", data.bool),
            message: try data.text("message", length: 0...1024))
    }
}

extension OrderGranted {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(
            transactionId: try data.required("transactionId", data.id),
            accountId: try data.required("accountId", data.id),
            items: try data.object("items"))
    }
}

extension OrderFinished {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(by: try data.choice("by", FinishedBy.self) ?? .client)
    }
}

extension OrderCancelled {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(reason: try data.required("reason") { key throws(EventValidationError) in
            try data.choice(key, CancelReason.self)
        })
    }
}

extension OrderRefunded {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(
            transactionId: try data.required("transactionId", data.id),
            amount: try data.money("amount"),
            reason: try data.text("reason", length: 0...256),
            refundedAt: try data.time("refundedAt"))
    }
}

extension RefundReversed {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(transactionId: try data.required("transactionId", data.id))
    }
}

extension ProviderNotified {
    init(_ data: DataFields) throws(EventValidationError) {
        self.init(
            provider: try data.required("provider") { key throws(EventValidationError) in try data.choice(key, Provider.self) },
            notificationId: try data.required("notificationId") { key throws(EventValidationError) in
                try data.text(key, length: 1...128, printable: true)
            },
            notificationType: try data.required("notificationType") { key throws(EventValidationError) in
                try data.text(key, length: 1...64, printable: true)
            },
            subtype: try data.text("subtype", length: 1...64, printable: true),
            effect: try data.required("effect") { key throws(EventValidationError) in try data.choice(key, ProviderEffect.self) },
            signedAt: try data.required("signedAt", data.time),
            transactionId: try data.id("transactionId"),
            originalTransactionId: try data.id("originalTransactionId"),
            productId: try data.id("productId"),
            amount: try data.money("amount"),
            unconvertedPrice: try data.unconvertedPrice("unconvertedPrice"),
            environment: try data.choice("environment", PurchaseEnvironment.self),
            appAccountToken: try data.uuid("appAccountToken"),
            purchasedAt: try data.time("purchasedAt"),
            revocationReason: try data.text("revocationReason", length: 1...64, printable: true),
            evidence: try data.required("evidence", data.object))
    }
}
