import Foundation
import LedgerCore

/// What a verified App Store notification says about an auto-renewable subscription, as the subscription's event
/// (`SubscriptionEvent`, docs/domain.md "Subscriptions"): the signed transaction and renewal info, normalized.
extension AppStoreNotification {
    /// The subscription this notification is about (its `originalTransactionId`) and the event it records; nil when
    /// it is not about an auto-renewable subscription (a one-time purchase, `TEST`, a summary) or says nothing about
    /// its state (`CONSUMPTION_REQUEST`, `REFUND_DECLINED`).
    public var subscriptionEvent: (subscriptionId: String, event: SubscriptionEvent)? {
        guard let type = SubscriptionEventType.of(notificationType: notificationType.rawValue, subtype: subtype) else {
            return nil
        }
        if let transaction, transaction.subscriptionTransaction == nil { return nil }
        let said = ProviderSaid(
            notificationId: notificationUUID, subtype: subtype, signedAt: signedDate,
            transaction: transaction?.subscriptionTransaction, renewalInfo: renewalInfo?.subscriptionRenewalInfo)
        guard let subscriptionId = transaction?.originalTransactionId ?? renewalInfo?.originalTransactionId else { return nil }
        return (subscriptionId, .provider(type, said))
    }
}

extension AppStoreTransaction {
    /// Apple's `type` of an auto-renewable subscription's transactions.
    public static let autoRenewable = "Auto-Renewable Subscription"

    /// This transaction as a period of its subscription; nil when it is not an auto-renewable subscription's (or
    /// has no end).
    public var subscriptionTransaction: SubscriptionTransaction? {
        guard type == Self.autoRenewable, let expiresDate else { return nil }
        let revocation = revocationDate.map { at in
            Revocation(at: at, kind: revocationKind, percentage: revocationKind == .refundProrated ? revocationPercentage : nil)
        }
        return SubscriptionTransaction(
            transactionId: transactionId, originalTransactionId: originalTransactionId,
            webOrderLineItemId: webOrderLineItemId, productId: productId, environment: environment.purchaseEnvironment,
            purchasedAt: purchaseDate, expiresAt: expiresDate, price: paidPrice.amount, unconvertedPrice: paidPrice.unconverted,
            revocation: revocation, familyShared: inAppOwnershipType == "FAMILY_SHARED", appAccountToken: appAccountToken,
            signedAt: signedDate)
    }

    /// An upgrade's revocation moves no money; `REFUND_FULL`, or a revocation Apple did not type, is a full refund.
    var revocationKind: Revocation.Kind {
        if isUpgraded == true { return .upgraded }
        return switch revocationType {
        case "REFUND_PRORATED": .refundProrated
        case "FAMILY_REVOKE": .familyRevoke
        default: .refundFull
        }
    }
}

extension AppStoreRenewalInfo {
    /// What Apple says will happen at the period's end. Apple's codes: `autoRenewStatus` 1 on; `expirationIntent`
    /// 1 voluntary, 2 billing error, 3 price increase not accepted, 4 product not for sale, 5 other;
    /// `priceIncreaseStatus` 0 not yet answered, 1 accepted. A code Apple adds later reads as `other` (an intent) or
    /// as none (a price increase).
    public var subscriptionRenewalInfo: SubscriptionRenewalInfo {
        let intent: SubscriptionRenewalInfo.ExpirationIntent? = switch expirationIntent {
        case nil: nil
        case 1: .voluntary
        case 2: .billingError
        case 3: .priceIncrease
        case 4: .productNotForSale
        default: .other
        }
        let priceIncrease: SubscriptionRenewalInfo.PriceIncrease? = switch priceIncreaseStatus {
        case 0: .pending
        case 1: .accepted
        default: nil
        }
        return SubscriptionRenewalInfo(
            autoRenew: autoRenewStatus == 1, renewsTo: autoRenewProductId, expirationIntent: intent,
            inBillingRetry: isInBillingRetryPeriod ?? false, gracePeriodExpiresAt: gracePeriodExpiresDate,
            priceIncrease: priceIncrease, signedAt: signedDate)
    }
}
