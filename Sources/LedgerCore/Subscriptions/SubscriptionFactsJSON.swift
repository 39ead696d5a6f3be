import Foundation

extension Subscription {
    /// The subscription's signed facts, as its projection row keeps them: every transaction as last signed, every
    /// renewal info, the notifications recorded, the periods the backend credited (and when). An entitlement at any moment is derived from them on read, so no
    /// stored "entitled" flag can go stale as time passes.
    public var factsJSON: JSONValue {
        .object([
            "transactions": .array(transactions.values.sorted { $0.transactionId < $1.transactionId }.map(\.json)),
            "renewalInfos": .array(renewalInfos.map(\.json)),
            "notificationIds": .array(notificationIds.sorted().map(JSONValue.string)),
            "grants": .object(grants.mapValues { .eventTime($0) }),
        ])
    }

    /// A subscription from its projection row (`factsJSON` and the row's other columns).
    public init(
        subscriptionId: String, facts: JSONValue, accountId: String?, orderId: String?, version: Int, updatedAt: Date
    ) throws(EventValidationError) {
        let fields = try DataFields(
            facts, path: "facts", owner: "a subscription's facts",
            allowing: ["transactions", "renewalInfos", "notificationIds", "grants"], rules: .stored)
        self.init(subscriptionId: subscriptionId, version: version, updatedAt: updatedAt)
        self.accountId = accountId
        self.orderId = orderId
        for (index, value) in try Self.array(fields, "transactions").enumerated() {
            let transaction = try SubscriptionTransaction(DataFields(
                value, path: "facts.transactions[\(index)]", owner: "a subscription's transaction",
                allowing: SubscriptionTransaction.fieldNames, rules: .stored))
            transactions[transaction.transactionId] = transaction
        }
        for (index, value) in try Self.array(fields, "renewalInfos").enumerated() {
            renewalInfos.append(try SubscriptionRenewalInfo(DataFields(
                value, path: "facts.renewalInfos[\(index)]", owner: "a subscription's renewal info",
                allowing: SubscriptionRenewalInfo.fieldNames, rules: .stored)))
        }
        if let value = fields.value("grants") {
            guard case .object(let members) = value else { throw fields.refuse("grants", "must be an object") }
            let times = try DataFields(value, path: fields.name("grants"), owner: "a subscription's grants",
                                       allowing: Array(members.keys), rules: .stored)
            for transactionId in members.keys { grants[transactionId] = try times.required(transactionId, times.time) }
        }
        for value in try Self.array(fields, "notificationIds") {
            guard case .string(let id) = value else { throw fields.refuse("notificationIds", "must hold strings") }
            notificationIds.insert(id)
        }
    }

    private static func array(_ fields: DataFields, _ key: String) throws(EventValidationError) -> [JSONValue] {
        guard let value = fields.value(key) else { return [] }
        guard case .array(let items) = value else { throw fields.refuse(key, "must be an array") }
        return items
    }
}
