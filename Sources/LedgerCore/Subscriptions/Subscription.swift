import Foundation

/// A subscription, folded from its stream: what its provider last signed about each of its transactions and about
/// its renewal, and which account owns it. The provider's facts are merged by when the provider signed them, never
/// by when they arrived: Apple delivers notifications late, out of order and more than once, and any order of the
/// same notifications folds to the same subscription (`SubscriptionTests`). Whether it entitles at a moment is
/// derived from those facts' dates (`entitlement(at:)`).
public struct Subscription: Sendable, Hashable {
    /// The stream's id: the provider's `originalTransactionId`.
    public var subscriptionId: String
    /// Every transaction (the first purchase, each renewal) as last signed, by `transactionId`.
    public var transactions: [String: SubscriptionTransaction]
    /// Every statement of the renewal info, in the order they were signed: what will happen at a period's end is
    /// only known from the statement in force then (`renewalInfo(at:)`).
    public var renewalInfos: [SubscriptionRenewalInfo]
    /// The notifications recorded (their ids): a notification delivered again changes nothing.
    public var notificationIds: Set<String>
    /// The periods the backend credited (`subscription.granted`): when, by transaction id.
    public var grants: [String: Date]
    /// The owner: the account of the order of the first purchase (`subscription.linked`), of a claim while nobody
    /// owned it (`subscription.claimed`), or of a transfer.
    public var accountId: String?
    /// The order of the first purchase, when the ledger has it (a claimed subscription may have none). A transfer
    /// leaves it: that order's story still points here.
    public var orderId: String?
    /// The stream's version, and when its last event was recorded.
    public var version: Int
    public var updatedAt: Date

    public init(subscriptionId: String, version: Int = 0, updatedAt: Date) {
        self.subscriptionId = subscriptionId
        self.transactions = [:]
        self.renewalInfos = []
        self.notificationIds = []
        self.grants = [:]
        self.version = version
        self.updatedAt = updatedAt
    }

    /// The renewal info as last signed.
    public var renewalInfo: SubscriptionRenewalInfo? { renewalInfos.last }

    /// The renewal info in force at `moment`: the last one signed by then.
    public func renewalInfo(at moment: Date) -> SubscriptionRenewalInfo? {
        renewalInfos.last { $0.signedAt <= moment }
    }

    /// When the last period the ledger knows of ends (the latest `expiresAt`): past it, the ledger expects to hear of
    /// a renewal, a billing failure or an expiry, and asks the provider when it heard nothing (the recovery schedule).
    public var periodEndsAt: Date? { transactions.values.lazy.map(\.expiresAt).max() }

    /// Whether what a provider said tells this subscription something it does not know: a transaction it has not
    /// seen or whose statement changed, or renewal info other than the last signed (a statement signed again with
    /// nothing changed, as every answer to a question is, is not news). The recovery schedule records only news.
    public func isNews(_ said: ProviderSaid) -> Bool {
        if let transaction = said.transaction {
            guard let known = transactions[transaction.transactionId] else { return true }
            if transaction.signedAt > known.signedAt, Self.unsigned(transaction) != Self.unsigned(known) { return true }
        }
        if let info = said.renewalInfo {
            guard let last = renewalInfo else { return true }
            if info.signedAt > last.signedAt, Self.unsigned(info) != Self.unsigned(last) { return true }
        }
        return false
    }

    private static func unsigned(_ transaction: SubscriptionTransaction) -> SubscriptionTransaction {
        var copy = transaction
        copy.signedAt = .distantPast
        return copy
    }

    private static func unsigned(_ info: SubscriptionRenewalInfo) -> SubscriptionRenewalInfo {
        var copy = info
        copy.signedAt = .distantPast
        return copy
    }

    /// The environment of its transactions (nil before the first).
    public var environment: PurchaseEnvironment? { transactions.values.first?.environment }

    /// The subscription after `event`, its `version`th, recorded at `recordedAt`.
    public static func evolve(
        _ state: consuming Subscription?, _ event: SubscriptionEvent, stream id: String, version: Int, recordedAt: Date
    ) -> Subscription {
        var subscription = state ?? Subscription(subscriptionId: id, updatedAt: recordedAt)
        switch event {
        case .provider(_, let said):
            if let notificationId = said.notificationId { subscription.notificationIds.insert(notificationId) }
            if let transaction = said.transaction { subscription.merge(transaction) }
            if let info = said.renewalInfo, !subscription.renewalInfos.contains(info) {
                let place = subscription.renewalInfos.firstIndex {
                    Self.signedLater($0, than: info, at: \.signedAt, json: \.json)
                }
                subscription.renewalInfos.insert(info, at: place ?? subscription.renewalInfos.endIndex)
            }
        case .linked(let orderId, let accountId):
            subscription.orderId = orderId
            subscription.accountId = accountId
        case .claimed(let accountId, let transaction):
            subscription.merge(transaction)
            subscription.accountId = accountId
        case .granted(_, let transaction):
            subscription.merge(transaction)
            // To the millisecond, as every time the facts keep: the row's facts read back as the fold made them.
            subscription.grants[transaction.transactionId] = EventTime.truncated(recordedAt)
        case .transferred(_, let to, let transaction):
            if let transaction { subscription.merge(transaction) }
            // The order stays the first purchase's (its story points here); the owner is the account it moved to.
            subscription.accountId = to
        }
        subscription.version = version
        subscription.updatedAt = recordedAt
        return subscription
    }

    /// Keeps `transaction` unless what is known of it was signed later.
    private mutating func merge(_ transaction: SubscriptionTransaction) {
        let known = transactions[transaction.transactionId]
        if known.map({ Self.signedLater(transaction, than: $0, at: \.signedAt, json: \.json) }) ?? true {
            transactions[transaction.transactionId] = transaction
        }
    }

    /// Whether `new` replaces `known`: signed later; signed at the same moment, the one whose canonical JSON sorts
    /// last, so that the choice does not depend on which arrived first.
    private static func signedLater<Fact>(
        _ new: Fact, than known: Fact, at signedAt: (Fact) -> Date, json: (Fact) -> JSONValue
    ) -> Bool {
        if signedAt(new) != signedAt(known) { return signedAt(new) > signedAt(known) }
        return json(known).canonicalJSON.utf8.lexicographicallyPrecedes(json(new).canonicalJSON.utf8)
    }
}
