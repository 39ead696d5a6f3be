import Foundation

/// The events of a subscription's stream (docs/domain.md, "Subscriptions"). Most say what the provider said — one
/// type per kind of App Store notification — and carry the signed facts it said it with; the state is made from the
/// facts alone (`Subscription`), so a notification's type names it for people, and arriving late or twice changes
/// nothing. Four are the ledger's own: which order and account the subscription belongs to, an account's claim of
/// it, a transfer, and the backend's credit of a period.
public enum SubscriptionEventType: String, Sendable, Hashable, CaseIterable {
    case started = "subscription.started"
    case renewed = "subscription.renewed"
    case renewalFailed = "subscription.renewal_failed"
    case graceExpired = "subscription.grace_expired"
    case expired = "subscription.expired"
    case planChanged = "subscription.plan_changed"
    case autoRenewChanged = "subscription.auto_renew_changed"
    case priceIncrease = "subscription.price_increase"
    case offerRedeemed = "subscription.offer_redeemed"
    case renewalExtended = "subscription.renewal_extended"
    case revoked = "subscription.revoked"
    case refunded = "subscription.refunded"
    case refundReversed = "subscription.refund_reversed"
    /// The provider's answer when the ledger asked (Apple's Get All Subscription Statuses, `subtype` its status:
    /// `ACTIVE`, `EXPIRED`, `BILLING_RETRY`, `BILLING_GRACE_PERIOD`, `REVOKED`; or a period found in the transaction
    /// history, `subtype` `HISTORY`): recorded only when it is news (`Subscription.isNews`), with the signed words as
    /// `evidence`.
    case answered = "subscription.answered"
    /// The ledger's: the first purchase's order, and so its account, owns the subscription.
    case linked = "subscription.linked"
    /// The ledger's: an account showed one of the subscription's signed transactions (a restore, a login on another
    /// device, a family member, a purchase made outside the app) while no account owned it, and owns it now.
    case claimed = "subscription.claimed"
    /// The ledger's: another account claimed the subscription with one of its signed transactions, and the
    /// operator's transfer policy (`SubscriptionTransferPolicy.transfer`) moved it there.
    case transferred = "subscription.transferred"
    /// The ledger's: the backend credited one period (a signed transaction of it) to the owner's account.
    case granted = "subscription.granted"

    /// The event an App Store notification (V2) about a subscription records; nil for one that says nothing about a
    /// subscription's state (`TEST`, `CONSUMPTION_REQUEST`, `REFUND_DECLINED`, `ONE_TIME_CHARGE`, a summary).
    public static func of(notificationType type: String, subtype: String?) -> SubscriptionEventType? {
        switch type {
        case "SUBSCRIBED": .started
        case "DID_RENEW": .renewed
        case "DID_FAIL_TO_RENEW": .renewalFailed
        case "GRACE_PERIOD_EXPIRED": .graceExpired
        case "EXPIRED": .expired
        case "DID_CHANGE_RENEWAL_PREF": .planChanged
        case "DID_CHANGE_RENEWAL_STATUS": .autoRenewChanged
        case "PRICE_INCREASE": .priceIncrease
        case "OFFER_REDEEMED": .offerRedeemed
        case "RENEWAL_EXTENDED": .renewalExtended
        case "RENEWAL_EXTENSION": subtype == "SUMMARY" ? nil : .renewalExtended
        case "REVOKE": .revoked
        case "REFUND": .refunded
        case "REFUND_REVERSED": .refundReversed
        default: nil
        }
    }

    /// The types that record what a provider said (all but the ledger's own).
    public var isProviders: Bool { ![.linked, .claimed, .transferred, .granted].contains(self) }
}

/// What a provider signed, as one event of the subscription records it: the signed transaction, the signed renewal
/// info, or both (a notification carries both; an answer to a question may carry one).
public struct ProviderSaid: Sendable, Hashable {
    /// The notification's id (Apple's `notificationUUID`); nil for an answer to the ledger's question.
    public var notificationId: String?
    public var subtype: String?
    /// When the provider signed the message (a notification's `signedDate`).
    public var signedAt: Date
    public var transaction: SubscriptionTransaction?
    public var renewalInfo: SubscriptionRenewalInfo?
    /// An answer's signed words as the provider sent them (an object of strings: Apple's `signedTransactionInfo`,
    /// `signedRenewalInfo`), kept on the event because no notification holds them. A notification's own JWS is kept
    /// where every notification is (`provider.notified`, `provider_messages`): nil here.
    public var evidence: JSONValue?

    public init(
        notificationId: String? = nil, subtype: String? = nil, signedAt: Date, transaction: SubscriptionTransaction? = nil,
        renewalInfo: SubscriptionRenewalInfo? = nil, evidence: JSONValue? = nil
    ) {
        self.notificationId = notificationId
        self.subtype = subtype
        self.signedAt = signedAt
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.evidence = evidence
    }
}

public enum SubscriptionEvent: Sendable, Hashable {
    /// `type` is one of the provider's (`SubscriptionEventType.isProviders`).
    case provider(SubscriptionEventType, ProviderSaid)
    case linked(orderId: String, accountId: String)
    /// By an account, shown the signed `transaction` (one of the subscription's); who asked is in the metadata.
    case claimed(accountId: String, transaction: SubscriptionTransaction)
    /// From the account that owned it to another, which showed the signed `transaction`; who asked is in the event's
    /// metadata (`actor`).
    case transferred(from: String, to: String, transaction: SubscriptionTransaction?)
    /// The period of the signed `transaction` credited to `accountId` (the owner) by the backend, at the event's
    /// recorded time; who asked is in the metadata.
    case granted(accountId: String, transaction: SubscriptionTransaction)

    public var type: SubscriptionEventType {
        switch self {
        case .provider(let type, _): type
        case .linked: .linked
        case .claimed: .claimed
        case .transferred: .transferred
        case .granted: .granted
        }
    }

    /// The signed transaction the event carries, if any: what it binds to its subscription.
    public var transaction: SubscriptionTransaction? {
        switch self {
        case .provider(_, let said): said.transaction
        case .claimed(_, let transaction): transaction
        case .transferred(_, _, let transaction): transaction
        case .granted(_, let transaction): transaction
        case .linked: nil
        }
    }
}
