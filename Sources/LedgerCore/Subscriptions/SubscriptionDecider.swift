import Foundation

/// Why the domain refused a well-formed subscription event (docs/domain.md, "Subscriptions", transitions).
public enum SubscriptionRefusal: Error, Sendable, Hashable {
    /// A transaction of another subscription (its `originalTransactionId` is not this stream's).
    case subscriptionMismatch(subscriptionId: String, originalTransactionId: String)
    /// A transaction from another environment than the subscription's (a sandbox renewal of a production one).
    case environmentMismatch(expected: PurchaseEnvironment, actual: PurchaseEnvironment)
    /// A transaction another subscription holds: each is bound to one subscription, once, across the ledger.
    case transactionBoundElsewhere(transactionId: String, subscriptionId: String)
    /// A claim for another account than the owner's (a restore or a login on another account): refused and listed,
    /// unless the operator's policy transfers it (`subscription.transferred`).
    case accountMismatch(owner: String, claimant: String)
    /// Already linked to this order and account: nothing to record.
    case alreadyLinked(orderId: String, accountId: String)
    /// Claimed by the account that owns it: nothing to record.
    case alreadyOwned(accountId: String)
    /// A period the backend credited already: each is credited once.
    case alreadyGranted(transactionId: String)
    /// A transfer or a grant of a subscription no account owns yet, or a transfer to the account that owns it.
    case invalidTransition(reason: String)

    public var code: String {
        switch self {
        case .subscriptionMismatch: "subscription_mismatch"
        case .environmentMismatch: "environment_mismatch"
        case .transactionBoundElsewhere: "transaction_bound_elsewhere"
        case .accountMismatch: "account_mismatch"
        case .alreadyLinked: "already_linked"
        case .alreadyOwned: "already_owned"
        case .alreadyGranted: "already_granted"
        case .invalidTransition: "invalid_transition"
        }
    }

    /// The refusal's facts as JSON, for the API's error `details`.
    public var details: [String: JSONValue] {
        switch self {
        case .subscriptionMismatch(let subscriptionId, let original):
            ["subscriptionId": .string(subscriptionId), "originalTransactionId": .string(original)]
        case .environmentMismatch(let expected, let actual):
            ["expected": .string(expected.rawValue), "actual": .string(actual.rawValue)]
        case .transactionBoundElsewhere(let transactionId, let subscriptionId):
            ["transactionId": .string(transactionId), "subscriptionId": .string(subscriptionId)]
        case .accountMismatch(let owner, let claimant):
            ["owner": .string(owner), "claimant": .string(claimant)]
        case .alreadyLinked(let orderId, let accountId):
            ["orderId": .string(orderId), "accountId": .string(accountId)]
        case .alreadyOwned(let accountId):
            ["accountId": .string(accountId)]
        case .alreadyGranted(let transactionId):
            ["transactionId": .string(transactionId)]
        case .invalidTransition:
            [:]
        }
    }

    public var message: String {
        switch self {
        case .subscriptionMismatch(let subscriptionId, let original):
            "the transaction belongs to subscription \(original), not \(subscriptionId)"
        case .environmentMismatch(let expected, let actual):
            "the transaction is from the \(actual.rawValue) environment, but the subscription is \(expected.rawValue)"
        case .transactionBoundElsewhere(let transactionId, let subscriptionId):
            "transaction \(transactionId) already belongs to subscription \(subscriptionId)"
        case .accountMismatch(let owner, let claimant):
            "the subscription belongs to account \(owner); account \(claimant) cannot claim it"
        case .alreadyLinked(let orderId, let accountId):
            "the subscription is already linked to order \(orderId) of account \(accountId)"
        case .alreadyOwned(let accountId):
            "the subscription already belongs to account \(accountId)"
        case .alreadyGranted(let transactionId):
            "the period of transaction \(transactionId) was credited already"
        case .invalidTransition(let reason):
            reason
        }
    }
}

/// Whether an event may be appended to a subscription (pure: the store brings the subscription).
public enum SubscriptionDecider {
    /// Nil: accepted. The checks of docs/domain.md's table, in its order. `bindings`: the subscription each of the
    /// event's transactions is bound to, when one is (the store reads it with the stream).
    public static func decide(
        _ event: SubscriptionEvent, on subscription: Subscription?, stream id: String, bindings: [String: String] = [:]
    ) -> SubscriptionRefusal? {
        if let transaction = event.transaction,
           let refusal = check(transaction, on: subscription, stream: id, bindings: bindings)
        {
            return refusal
        }
        switch event {
        case .provider:
            return nil
        case .linked(let orderId, let accountId):
            guard let owner = subscription?.accountId else { return nil }
            guard owner == accountId else { return .accountMismatch(owner: owner, claimant: accountId) }
            return .alreadyLinked(orderId: subscription?.orderId ?? orderId, accountId: owner)
        case .claimed(let accountId, _):
            guard let owner = subscription?.accountId else { return nil }
            return owner == accountId ? .alreadyOwned(accountId: owner) : .accountMismatch(owner: owner, claimant: accountId)
        case .granted(let accountId, let transaction):
            guard let owner = subscription?.accountId else {
                return .invalidTransition(reason: "the subscription has no owner yet: claim it before crediting its periods")
            }
            guard owner == accountId else { return .accountMismatch(owner: owner, claimant: accountId) }
            if subscription?.grants[transaction.transactionId] != nil {
                return .alreadyGranted(transactionId: transaction.transactionId)
            }
            return nil
        case .transferred(let from, let to, _):
            guard let owner = subscription?.accountId else {
                return .invalidTransition(reason: "the subscription has no owner yet: it is claimed, not transferred")
            }
            guard owner == from else { return .accountMismatch(owner: owner, claimant: from) }
            guard to != from else { return .invalidTransition(reason: "the subscription already belongs to account \(to)") }
            return nil
        }
    }

    /// A transaction of this subscription, of its environment, bound to no other.
    private static func check(
        _ transaction: SubscriptionTransaction, on subscription: Subscription?, stream id: String, bindings: [String: String]
    ) -> SubscriptionRefusal? {
        guard transaction.originalTransactionId == id else {
            return .subscriptionMismatch(subscriptionId: id, originalTransactionId: transaction.originalTransactionId)
        }
        if let environment = subscription?.environment, environment != transaction.environment {
            return .environmentMismatch(expected: environment, actual: transaction.environment)
        }
        if let holder = bindings[transaction.transactionId], holder != id {
            return .transactionBoundElsewhere(transactionId: transaction.transactionId, subscriptionId: holder)
        }
        return nil
    }
}

extension StreamKind {
    /// One subscription's events: one stream per provider subscription (`originalTransactionId`).
    public static let subscription = StreamKind("subscription")
}

/// The subscription's events and fold, as the store's folds see them.
public enum SubscriptionStream: StreamDomain {
    public static let kind = StreamKind.subscription

    public static func storedEvent(type: String, dataText: [UInt8]) throws -> SubscriptionEvent {
        try SubscriptionEvent(storedType: type, dataText: dataText)
    }

    public static func evolve(
        _ state: consuming Subscription?, _ event: SubscriptionEvent, stream id: String, version: Int, recordedAt: Date
    ) -> Subscription? {
        Subscription.evolve(state, event, stream: id, version: version, recordedAt: recordedAt)
    }
}
