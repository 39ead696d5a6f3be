import Foundation

/// One paid period of a subscription as its provider signed it (an App Store `JWSTransactionDecodedPayload` of an
/// auto-renewable subscription): the first purchase and every renewal is a transaction of its own. The provider may
/// sign the same transaction again later (a refund adds `revokedAt`, a reversed refund removes it): the one signed
/// last is the truth (`Subscription`).
public struct SubscriptionTransaction: Sendable, Hashable {
    public var transactionId: String
    /// The subscription's id at its provider: the same for every renewal.
    public var originalTransactionId: String
    /// The App Store's id of this billing period (`webOrderLineItemId`), when given.
    public var webOrderLineItemId: String?
    public var productId: String
    public var environment: PurchaseEnvironment
    /// When this period was bought, and when it ends.
    public var purchasedAt: Date
    public var expiresAt: Date
    /// What was paid, in minor units; a price that is not a whole number of them is kept as stated
    /// (`unconvertedPrice`), never rounded. Neither: no price stated (a free trial, an older message).
    public var price: Money?
    public var unconvertedPrice: UnconvertedPrice?
    /// Set when the provider took the period back (a refund, a family-sharing revocation).
    public var revocation: Revocation?
    /// A family member's access to someone else's purchase: it entitles, and is never revenue.
    public var familyShared: Bool
    /// The `appAccountToken` the app bought with, when it gave one.
    public var appAccountToken: UUID?
    /// When the provider signed this statement of it.
    public var signedAt: Date

    public init(
        transactionId: String, originalTransactionId: String, webOrderLineItemId: String? = nil, productId: String,
        environment: PurchaseEnvironment = .production, purchasedAt: Date, expiresAt: Date, price: Money? = nil,
        unconvertedPrice: UnconvertedPrice? = nil, revocation: Revocation? = nil, familyShared: Bool = false,
        appAccountToken: UUID? = nil, signedAt: Date
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.productId = productId
        self.environment = environment
        self.purchasedAt = purchasedAt
        self.expiresAt = expiresAt
        self.price = price
        self.unconvertedPrice = unconvertedPrice
        self.revocation = revocation
        self.familyShared = familyShared
        self.appAccountToken = appAccountToken
        self.signedAt = signedAt
    }
}

/// A period the provider took back: when, and why.
public struct Revocation: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Refunded in full (`REFUND_FULL`, or a refund without a type).
        case refundFull = "refund_full"
        /// Refunded in part (`REFUND_PRORATED`): `percentage` of the price, in thousandths of a percent.
        case refundProrated = "refund_prorated"
        /// A family member's access ended (`FAMILY_REVOKE`): no money moved.
        case familyRevoke = "family_revoke"
        /// The customer upgraded to a higher plan mid-period (Apple's `isUpgraded`): the new plan's period covers from
        /// then, the rest of this one's price went to it; no money moved back.
        case upgraded
    }

    public var at: Date
    public var kind: Kind
    /// For a prorated refund: the part refunded, 0…100,000 (Apple's `revocationPercentage`: 75,000 is 75 %).
    public var percentage: Int64?

    public init(at: Date, kind: Kind, percentage: Int64? = nil) {
        self.at = at
        self.kind = kind
        self.percentage = percentage
    }
}

/// What the provider says will happen at the end of the current period (an App Store
/// `JWSRenewalInfoDecodedPayload`): signed anew whenever it changes; the one signed last is the truth.
public struct SubscriptionRenewalInfo: Sendable, Hashable {
    /// Why the subscription will not renew, or did not (Apple's `expirationIntent`).
    public enum ExpirationIntent: String, Sendable, Hashable, CaseIterable {
        case voluntary, billingError = "billing_error", priceIncrease = "price_increase"
        case productNotForSale = "product_not_for_sale", other
    }

    /// Apple's `priceIncreaseStatus`, when a price increase is under way.
    public enum PriceIncrease: String, Sendable, Hashable, CaseIterable {
        case pending, accepted
    }

    public var autoRenew: Bool
    /// The product the next period renews to (another one after an upgrade or downgrade).
    public var renewsTo: String?
    public var expirationIntent: ExpirationIntent?
    /// The provider is still trying to charge after a failed renewal.
    public var inBillingRetry: Bool
    /// Access continues until then while billing is retried (a grace period), when the app has one.
    public var gracePeriodExpiresAt: Date?
    public var priceIncrease: PriceIncrease?
    public var signedAt: Date

    public init(
        autoRenew: Bool, renewsTo: String? = nil, expirationIntent: ExpirationIntent? = nil, inBillingRetry: Bool = false,
        gracePeriodExpiresAt: Date? = nil, priceIncrease: PriceIncrease? = nil, signedAt: Date
    ) {
        self.autoRenew = autoRenew
        self.renewsTo = renewsTo
        self.expirationIntent = expirationIntent
        self.inBillingRetry = inBillingRetry
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.priceIncrease = priceIncrease
        self.signedAt = signedAt
    }
}
