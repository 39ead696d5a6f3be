import Foundation
import LedgerCore

/// A notification type as Apple names it (`SUBSCRIBED`, `REFUND`, ...). A string-backed struct, not an enum, so a
/// type Apple adds later still decodes and reaches the ledger, which decides what to do with it.
public struct AppStoreNotificationType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let subscribed = Self(rawValue: "SUBSCRIBED")
    public static let didRenew = Self(rawValue: "DID_RENEW")
    public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")
    public static let refund = Self(rawValue: "REFUND")
    public static let refundDeclined = Self(rawValue: "REFUND_DECLINED")
    public static let refundReversed = Self(rawValue: "REFUND_REVERSED")
    public static let revoke = Self(rawValue: "REVOKE")
    public static let expired = Self(rawValue: "EXPIRED")
    public static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")
    public static let test = Self(rawValue: "TEST")
}

/// A verified App Store Server Notification V2: the signature, chain and app checks all held. The nested
/// transaction and renewal info were verified the same way. `rawJWS` is the `signedPayload` verbatim.
public struct AppStoreNotification: Sendable, Hashable {
    public var notificationType: AppStoreNotificationType
    public var subtype: String?
    public var notificationUUID: String
    public var signedDate: Date
    public var version: String?
    public var bundleId: String
    public var appAppleId: Int64?
    public var environment: AppStoreEnvironment
    public var transaction: AppStoreTransaction?
    public var renewalInfo: AppStoreRenewalInfo?
    public var rawJWS: String
}

/// A verified StoreKit 2 / App Store Server API signed transaction (`JWSTransaction`). Money stays as Apple sends
/// it: `price` in milliunits of `currency` (9990 = 9.99), an integer, never a floating-point number.
public struct AppStoreTransaction: Sendable, Hashable {
    public var transactionId: String
    public var originalTransactionId: String
    /// The UUID the client set at purchase; see ``AppAccountToken`` for how it is derived from an order id.
    public var appAccountToken: UUID?
    public var productId: String
    public var bundleId: String
    public var purchaseDate: Date
    /// Milliunits of `currency` (1/1000 of its major unit).
    public var price: Int64?
    /// ISO 4217 code.
    public var currency: String?
    public var environment: AppStoreEnvironment
    public var revocationDate: Date?
    /// 0 = other, 1 = an issue in the app (Apple's codes; kept as sent).
    public var revocationReason: Int?
    public var signedDate: Date
    /// `Consumable`, `Non-Consumable`, `Auto-Renewable Subscription`, `Non-Renewing Subscription`.
    public var type: String
    public var quantity: Int?
    public var expiresDate: Date?
    public var storefront: String?
    public var transactionReason: String?
    /// A subscription's billing period (`webOrderLineItemId`).
    public var webOrderLineItemId: String?
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`; with a prorated refund, the part refunded in thousandths of
    /// a percent (`revocationPercentage`, 0…100,000).
    public var revocationType: String?
    public var revocationPercentage: Int64?
    /// `PURCHASED`, or `FAMILY_SHARED` for a family member's access.
    public var inAppOwnershipType: String?
    /// Set on a subscription's period the customer upgraded from: Apple revokes it at the upgrade, and the rest of its
    /// price goes to the new plan (no refund).
    public var isUpgraded: Bool? = nil
    public var rawJWS: String
}

/// A verified subscription renewal info (`JWSRenewalInfo`). It carries no bundle id: it is tied to its
/// notification by being nested in it, and its environment must match the notification's.
public struct AppStoreRenewalInfo: Sendable, Hashable {
    public var originalTransactionId: String
    public var productId: String?
    public var autoRenewProductId: String?
    public var autoRenewStatus: Int?
    public var environment: AppStoreEnvironment
    public var signedDate: Date
    public var renewalDate: Date?
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Date?
    public var appAccountToken: UUID?
    /// 0: the customer has not answered a price increase yet; 1: accepted (or none needed).
    public var priceIncreaseStatus: Int?
    public var rawJWS: String
}

/// The JSON shapes as Apple sends them; mapped to the public types once the signature holds.
enum AppStoreWire {
    struct Notification: Decodable {
        var notificationType: String
        var subtype: String?
        var notificationUUID: String
        var signedDate: Int64
        var version: String?
        var data: AppData?
        var summary: AppData?
    }

    /// `data` (or `summary` for summary notifications): only what the ledger checks and uses.
    struct AppData: Decodable {
        var bundleId: String
        var appAppleId: Int64?
        var environment: String
        var signedTransactionInfo: String?
        var signedRenewalInfo: String?
    }

    struct Transaction: Decodable {
        var transactionId: String
        var originalTransactionId: String
        var appAccountToken: String?
        var productId: String
        var bundleId: String
        var purchaseDate: Int64
        var price: Int64?
        var currency: String?
        var environment: String
        var revocationDate: Int64?
        var revocationReason: Int?
        var signedDate: Int64
        var type: String
        var quantity: Int?
        var expiresDate: Int64?
        var storefront: String?
        var transactionReason: String?
        var webOrderLineItemId: String?
        var revocationType: String?
        var revocationPercentage: Int64?
        var inAppOwnershipType: String?
        var isUpgraded: Bool?
    }

    struct RenewalInfo: Decodable {
        var originalTransactionId: String
        var productId: String?
        var autoRenewProductId: String?
        var autoRenewStatus: Int?
        var environment: String
        var signedDate: Int64
        var renewalDate: Int64?
        var expirationIntent: Int?
        var isInBillingRetryPeriod: Bool?
        var gracePeriodExpiresDate: Int64?
        var appAccountToken: String?
        var priceIncreaseStatus: Int?
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(AppStoreVerificationError) -> T {
        do { return try JSONDecoder().decode(type, from: Data(bytes)) } catch {
            throw .malformedPayload(field: DecodingErrorField.path(of: error))
        }
    }

    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }

    static func environment(_ text: String) throws(AppStoreVerificationError) -> AppStoreEnvironment {
        guard let environment = AppStoreEnvironment(rawValue: text) else { throw .unknownEnvironment(text) }
        return environment
    }

    static func uuid(_ text: String?, field: String) throws(AppStoreVerificationError) -> UUID? {
        guard let text else { return nil }
        guard let uuid = UUID(text: text) else { throw .malformedPayload(field: field) }
        return uuid
    }

    static func transaction(_ wire: Transaction, raw: String) throws(AppStoreVerificationError) -> AppStoreTransaction {
        AppStoreTransaction(
            transactionId: wire.transactionId, originalTransactionId: wire.originalTransactionId,
            appAccountToken: try uuid(wire.appAccountToken, field: "appAccountToken"),
            productId: wire.productId, bundleId: wire.bundleId,
            purchaseDate: date(milliseconds: wire.purchaseDate), price: wire.price, currency: wire.currency,
            environment: try environment(wire.environment),
            revocationDate: wire.revocationDate.map(date(milliseconds:)), revocationReason: wire.revocationReason,
            signedDate: date(milliseconds: wire.signedDate), type: wire.type, quantity: wire.quantity,
            expiresDate: wire.expiresDate.map(date(milliseconds:)), storefront: wire.storefront,
            transactionReason: wire.transactionReason, webOrderLineItemId: wire.webOrderLineItemId,
            revocationType: wire.revocationType, revocationPercentage: wire.revocationPercentage,
            inAppOwnershipType: wire.inAppOwnershipType, isUpgraded: wire.isUpgraded, rawJWS: raw)
    }

    static func renewalInfo(_ wire: RenewalInfo, raw: String) throws(AppStoreVerificationError) -> AppStoreRenewalInfo {
        AppStoreRenewalInfo(
            originalTransactionId: wire.originalTransactionId, productId: wire.productId,
            autoRenewProductId: wire.autoRenewProductId, autoRenewStatus: wire.autoRenewStatus,
            environment: try environment(wire.environment), signedDate: date(milliseconds: wire.signedDate),
            renewalDate: wire.renewalDate.map(date(milliseconds:)), expirationIntent: wire.expirationIntent,
            isInBillingRetryPeriod: wire.isInBillingRetryPeriod,
            gracePeriodExpiresDate: wire.gracePeriodExpiresDate.map(date(milliseconds:)),
            appAccountToken: try uuid(wire.appAccountToken, field: "appAccountToken"),
            priceIncreaseStatus: wire.priceIncreaseStatus, rawJWS: raw)
    }
}
