import Foundation

extension SubscriptionEvent {
    /// Parses a new event (its type and data), naming the field in a refusal.
    public init(type: String, data: JSONValue) throws(EventValidationError) {
        try self.init(type: type, data: data, rules: .new)
    }

    /// Parses an event read back from the log, by the rules it was written under.
    public init(storedType type: String, dataText: [UInt8]) throws {
        guard let members = try JSONParser.parseMembers(dataText) else { throw DataFields.notAnObject("data") }
        try self.init(type: type, data: .object(Dictionary(members, uniquingKeysWith: { first, _ in first })), rules: .stored)
    }

    init(type: String, data: JSONValue, rules: DataFields.Rules) throws(EventValidationError) {
        guard let eventType = SubscriptionEventType(rawValue: type) else { throw .unknownEventType(type) }
        switch eventType {
        case .linked:
            let fields = try DataFields(data, path: "data", owner: type, allowing: ["orderId", "accountId"], rules: rules)
            self = .linked(orderId: try fields.required("orderId", fields.id), accountId: try fields.required("accountId", fields.id))
        case .claimed, .granted:
            let fields = try DataFields(data, path: "data", owner: type, allowing: ["accountId", "transaction"], rules: rules)
            let accountId = try fields.required("accountId", fields.id)
            let transaction = try fields.required("transaction") { key throws(EventValidationError) in
                try Self.transaction(fields, key)
            }
            self = eventType == .claimed
                ? .claimed(accountId: accountId, transaction: transaction)
                : .granted(accountId: accountId, transaction: transaction)
        case .transferred:
            let fields = try DataFields(data, path: "data", owner: type, allowing: ["from", "to", "transaction"], rules: rules)
            self = .transferred(
                from: try fields.required("from", fields.id), to: try fields.required("to", fields.id),
                transaction: try Self.transaction(fields, "transaction"))
        default:
            let fields = try DataFields(
                data, path: "data", owner: type,
                allowing: ["notificationId", "subtype", "signedAt", "transaction", "renewalInfo", "evidence"], rules: rules)
            let said = ProviderSaid(
                notificationId: try fields.id("notificationId"),
                subtype: try fields.text("subtype", length: 1...64, printable: true),
                signedAt: try fields.required("signedAt", fields.time),
                transaction: try Self.transaction(fields, "transaction"),
                renewalInfo: try fields.value("renewalInfo").map { value throws(EventValidationError) in
                    try SubscriptionRenewalInfo(DataFields(
                        value, path: "data.renewalInfo", owner: "a subscription's renewal info",
                        allowing: SubscriptionRenewalInfo.fieldNames, rules: rules))
                },
                evidence: try Self.evidence(fields))
            guard said.transaction != nil || said.renewalInfo != nil else {
                throw .invalidField(field: "data.transaction", message: "data.transaction or data.renewalInfo is required")
            }
            self = .provider(eventType, said)
        }
    }

    /// An answer's signed words (`ProviderSaid.evidence`): an object of strings, if given.
    private static func evidence(_ fields: DataFields) throws(EventValidationError) -> JSONValue? {
        guard let value = fields.value("evidence") else { return nil }
        guard case .object(let members) = value, !members.isEmpty, members.values.allSatisfy({
            if case .string = $0 { true } else { false }
        }) else {
            throw fields.refuse("evidence", "must be an object of strings (the provider's signed words)")
        }
        return value
    }

    /// The signed transaction at `key`, if given.
    private static func transaction(_ fields: DataFields, _ key: String) throws(EventValidationError) -> SubscriptionTransaction? {
        try fields.value(key).map { value throws(EventValidationError) in
            try SubscriptionTransaction(DataFields(
                value, path: fields.name(key), owner: "a subscription's transaction",
                allowing: SubscriptionTransaction.fieldNames, rules: fields.rules))
        }
    }

    /// The event's data as stored: `SubscriptionEvent(type: type.rawValue, data: data)` gives this event back.
    public var data: JSONValue {
        switch self {
        case .linked(let orderId, let accountId):
            return .object(["orderId": .string(orderId), "accountId": .string(accountId)])
        case .claimed(let accountId, let transaction), .granted(let accountId, let transaction):
            return .object(["accountId": .string(accountId), "transaction": transaction.json])
        case .transferred(let from, let to, let transaction):
            var members: [String: JSONValue] = ["from": .string(from), "to": .string(to)]
            members["transaction"] = transaction?.json
            return .object(members)
        case .provider(_, let said):
            var members: [String: JSONValue] = ["signedAt": .eventTime(said.signedAt)]
            members["notificationId"] = said.notificationId.map(JSONValue.string)
            members["subtype"] = said.subtype.map(JSONValue.string)
            members["transaction"] = said.transaction?.json
            members["renewalInfo"] = said.renewalInfo?.json
            members["evidence"] = said.evidence
            return .object(members)
        }
    }
}

extension SubscriptionTransaction {
    static let fieldNames = [
        "transactionId", "originalTransactionId", "webOrderLineItemId", "productId", "environment", "purchasedAt",
        "expiresAt", "price", "unconvertedPrice", "revocation", "familyShared", "appAccountToken", "signedAt",
    ]

    init(_ fields: DataFields) throws(EventValidationError) {
        let revocation = try fields.value("revocation").map { value throws(EventValidationError) in
            let revocation = try DataFields(
                value, path: fields.name("revocation"), owner: "a revocation", allowing: ["at", "kind", "percentage"],
                rules: fields.rules)
            return Revocation(
                at: try revocation.required("at", revocation.time),
                kind: try revocation.required("kind") { key throws(EventValidationError) in try revocation.choice(key, Revocation.Kind.self) },
                percentage: try revocation.integer("percentage", in: 0...100_000))
        }
        self.init(
            transactionId: try fields.required("transactionId", fields.id),
            originalTransactionId: try fields.required("originalTransactionId", fields.id),
            webOrderLineItemId: try fields.id("webOrderLineItemId"),
            productId: try fields.required("productId", fields.id),
            environment: try fields.required("environment") { key throws(EventValidationError) in
                try fields.choice(key, PurchaseEnvironment.self)
            },
            purchasedAt: try fields.required("purchasedAt", fields.time),
            expiresAt: try fields.required("expiresAt", fields.time),
            price: try fields.money("price"),
            unconvertedPrice: try fields.unconvertedPrice("unconvertedPrice"),
            revocation: revocation,
            familyShared: try fields.bool("familyShared") ?? false,
            appAccountToken: try fields.uuid("appAccountToken"),
            signedAt: try fields.required("signedAt", fields.time))
        if price != nil, unconvertedPrice != nil {
            throw fields.refuse("unconvertedPrice", "must not be given with price")
        }
    }

    var json: JSONValue {
        var members: [String: JSONValue] = [
            "transactionId": .string(transactionId), "originalTransactionId": .string(originalTransactionId),
            "productId": .string(productId), "environment": .string(environment.rawValue),
            "purchasedAt": .eventTime(purchasedAt), "expiresAt": .eventTime(expiresAt), "familyShared": .bool(familyShared),
            "signedAt": .eventTime(signedAt),
        ]
        members["webOrderLineItemId"] = webOrderLineItemId.map(JSONValue.string)
        members["price"] = price.map(JSONValue.money)
        members["unconvertedPrice"] = unconvertedPrice.map(JSONValue.unconvertedPrice)
        members["appAccountToken"] = appAccountToken.map(JSONValue.uuid)
        members["revocation"] = revocation.map { revocation in
            var members: [String: JSONValue] = ["at": .eventTime(revocation.at), "kind": .string(revocation.kind.rawValue)]
            members["percentage"] = revocation.percentage.map(JSONValue.int)
            return .object(members)
        }
        return .object(members)
    }
}

extension SubscriptionRenewalInfo {
    static let fieldNames = [
        "autoRenew", "renewsTo", "expirationIntent", "inBillingRetry", "gracePeriodExpiresAt", "priceIncrease", "signedAt",
    ]

    init(_ fields: DataFields) throws(EventValidationError) {
        self.init(
            autoRenew: try fields.required("autoRenew", fields.bool),
            renewsTo: try fields.id("renewsTo"),
            expirationIntent: try fields.choice("expirationIntent", ExpirationIntent.self),
            inBillingRetry: try fields.bool("inBillingRetry") ?? false,
            gracePeriodExpiresAt: try fields.time("gracePeriodExpiresAt"),
            priceIncrease: try fields.choice("priceIncrease", PriceIncrease.self),
            signedAt: try fields.required("signedAt", fields.time))
    }

    var json: JSONValue {
        var members: [String: JSONValue] = [
            "autoRenew": .bool(autoRenew), "inBillingRetry": .bool(inBillingRetry), "signedAt": .eventTime(signedAt),
        ]
        members["renewsTo"] = renewsTo.map(JSONValue.string)
        members["expirationIntent"] = expirationIntent.map { .string($0.rawValue) }
        members["gracePeriodExpiresAt"] = gracePeriodExpiresAt.map(JSONValue.eventTime)
        members["priceIncrease"] = priceIncrease.map { .string($0.rawValue) }
        return .object(members)
    }
}
