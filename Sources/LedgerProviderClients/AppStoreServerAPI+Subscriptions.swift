import Foundation
import LedgerCore

extension AppStoreServerAPI {
    /// Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`): for each subscription group of
    /// the customer that `transactionId` belongs to, the last transaction of each of its subscriptions, with its
    /// status and its renewal info, as Apple signed them. Production first, then Sandbox when Production does not know
    /// the transaction (4040010), as `transactionInfo`. Any transaction of the subscription may be given; the ledger
    /// gives the subscription's id (its `originalTransactionId`).
    public func subscriptionStatuses(_ transactionId: String) async throws(AppStoreServerAPIError) -> AppStoreSubscriptionStatuses {
        guard let path = Self.pathComponent(transactionId) else { throw .invalidTransactionId(transactionId) }
        for environment in AppStoreServerEnvironment.allCases {
            let base = environment == .production ? productionURL : sandboxURL
            guard case .found(let body) = try await get(base + "/inApps/v1/subscriptions/" + path) else { continue }
            return AppStoreSubscriptionStatuses(
                lastTransactions: try Self.lastTransactions(in: body, from: environment), environment: environment)
        }
        throw .transactionNotFound(transactionId)
    }

    /// `data[].lastTransactions[]` of a `StatusResponse`, every member required: an item Apple sent without its
    /// signed words cannot be believed, and one that cannot be read makes the answer malformed.
    static func lastTransactions(
        in body: [UInt8], from environment: AppStoreServerEnvironment
    ) throws(AppStoreServerAPIError) -> [AppStoreSubscriptionStatuses.LastTransaction] {
        guard let answer = try? JSONValue(parsing: body), case .object = answer else {
            throw .malformedAnswer("\(environment.rawValue)'s subscription statuses are not a JSON object: \(text(body))")
        }
        guard case .array(let groups)? = answer["data"] else {
            throw .malformedAnswer("no data array in \(environment.rawValue)'s subscription statuses")
        }
        var items: [AppStoreSubscriptionStatuses.LastTransaction] = []
        for group in groups {
            guard case .array(let lastTransactions)? = group["lastTransactions"] else {
                throw .malformedAnswer("a subscription group without lastTransactions in \(environment.rawValue)'s answer")
            }
            for item in lastTransactions {
                guard case .string(let original)? = item["originalTransactionId"], case .int(let code)? = item["status"],
                      let status = AppStoreSubscriptionStatus(rawValue: code),
                      case .string(let transaction)? = item["signedTransactionInfo"],
                      case .string(let renewalInfo)? = item["signedRenewalInfo"]
                else {
                    throw .malformedAnswer("an item of lastTransactions in \(environment.rawValue)'s answer is not understood")
                }
                items.append(.init(
                    originalTransactionId: original, status: status, signedTransactionInfo: transaction,
                    signedRenewalInfo: renewalInfo))
            }
        }
        return items
    }
}

/// Apple's status of an auto-renewable subscription (`status` of Get All Subscription Statuses).
public enum AppStoreSubscriptionStatus: Int64, Sendable, Hashable, CaseIterable {
    case active = 1, expired, billingRetry, billingGracePeriod, revoked

    /// Its name as the ledger records it (`subscription.answered`'s `subtype`).
    public var name: String {
        switch self {
        case .active: "ACTIVE"
        case .expired: "EXPIRED"
        case .billingRetry: "BILLING_RETRY"
        case .billingGracePeriod: "BILLING_GRACE_PERIOD"
        case .revoked: "REVOKED"
        }
    }

    /// Whether Apple says the subscription has ended: nothing more will happen to its last period, so the ledger asks
    /// no more until a later period ends.
    public var hasEnded: Bool {
        switch self {
        case .expired, .revoked: true
        case .active, .billingRetry, .billingGracePeriod: false
        }
    }
}

/// What Get All Subscription Statuses answered, unverified: the caller verifies each signed string with
/// `AppStoreJWSVerifier` before believing it.
public struct AppStoreSubscriptionStatuses: Sendable, Hashable {
    public struct LastTransaction: Sendable, Hashable {
        public let originalTransactionId: String
        public let status: AppStoreSubscriptionStatus
        public let signedTransactionInfo: String
        public let signedRenewalInfo: String
    }

    public let lastTransactions: [LastTransaction]
    /// The environment that knew the transaction.
    public let environment: AppStoreServerEnvironment
}
