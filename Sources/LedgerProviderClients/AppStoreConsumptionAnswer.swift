import Foundation
import LedgerCore
import LedgerProviders

/// What the ledger tells Apple when a customer asks Apple for a refund (`CONSUMPTION_REQUEST`): Send Consumption
/// Information (v2), from what the ledger knows — whether the purchase was delivered — by the operator's policy
/// (`appStore.consumptionAnswers` in the providers file; none: never answered). The ledger does not know how much of a
/// purchase was used, so it never states a consumption percentage.
public struct ConsumptionAnswerPolicy: Sendable, Hashable {
    public enum RefundPreference: String, Sendable, Hashable, CaseIterable {
        /// No preference: Apple decides from the delivery alone.
        case none
        /// Decline a refund of what was delivered, grant in full a refund of what was not.
        case declineWhenDelivered
    }

    public var sampleContentProvided: Bool
    public var refundPreference: RefundPreference

    public init(sampleContentProvided: Bool, refundPreference: RefundPreference = .none) {
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
    }

    init(_ configuration: ProviderConfiguration.ConsumptionAnswers) {
        self.init(
            sampleContentProvided: configuration.sampleContentProvided,
            refundPreference: configuration.refundPreference.flatMap(RefundPreference.init(rawValue:)) ?? .none)
    }

    /// Apple's deadline: an answer is taken within 12 hours of its request.
    public static let window: Duration = .seconds(12 * 3_600)
    /// The waits between attempts that got no answer; the last repeats until the window closes.
    public static let delays: [Duration] = [60, 300, 900, 1_800, 3_600].map { .seconds($0) }

    /// When to try again after `attempts` attempts without an answer, the last at `now`; nil past Apple's window of a
    /// request made at `requestedAt`.
    public static func nextAttempt(afterAttempts attempts: Int, at now: Date, requestedAt: Date) -> Date? {
        guard let last = delays.last else { return nil }
        let delay = attempts >= 1 && attempts <= delays.count ? delays[attempts - 1] : last
        let next = now.addingTimeInterval(delay.seconds)
        return next < requestedAt.addingTimeInterval(window.seconds) ? next : nil
    }

    /// The answer for a purchase the ledger shows delivered (credited to the customer), or not.
    public func answer(delivered: Bool) -> ConsumptionAnswer {
        let preference: ConsumptionAnswer.RefundPreference? = switch refundPreference {
        case .none: nil
        case .declineWhenDelivered: delivered ? .decline : .grantFull
        }
        return ConsumptionAnswer(
            sampleContentProvided: sampleContentProvided, deliveryStatus: delivered ? .delivered : .undeliveredOther,
            refundPreference: preference)
    }
}

/// A `ConsumptionRequest` body, as Apple's v2 endpoint takes it: consent (always given: the policy exists only when
/// the operator's terms obtain it), whether a sample was provided, the delivery, and an optional preference.
public struct ConsumptionAnswer: Sendable, Hashable {
    public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable {
        case delivered = "DELIVERED"
        case undeliveredOther = "UNDELIVERED_OTHER"
    }

    public enum RefundPreference: String, Sendable, Hashable, CaseIterable {
        case decline = "DECLINE"
        case grantFull = "GRANT_FULL"
    }

    public var sampleContentProvided: Bool
    public var deliveryStatus: DeliveryStatus
    public var refundPreference: RefundPreference?

    /// The request body, as sent and as kept (`consumption_answers.body`).
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "customerConsented": true, "sampleContentProvided": .bool(sampleContentProvided),
            "deliveryStatus": .string(deliveryStatus.rawValue),
        ]
        members["refundPreference"] = refundPreference.map { .string($0.rawValue) }
        return .object(members)
    }
}

extension AppStoreServerAPI {
    /// Send Consumption Information (`PUT /inApps/v2/transactions/consumption/{transactionId}`, 202 when accepted):
    /// Production first, then Sandbox when Production does not know the transaction (4040010), as `transactionInfo`.
    /// Returns the environment that took it.
    public func sendConsumptionInformation(
        _ transactionId: String, _ answer: ConsumptionAnswer
    ) async throws(AppStoreServerAPIError) -> AppStoreServerEnvironment {
        guard let path = Self.pathComponent(transactionId) else { throw .invalidTransactionId(transactionId) }
        for environment in AppStoreServerEnvironment.allCases {
            let base = environment == .production ? productionURL : sandboxURL
            guard case .found = try await send(.PUT, base + "/inApps/v2/transactions/consumption/" + path, json: answer.json)
            else { continue }
            return environment
        }
        throw .transactionNotFound(transactionId)
    }
}
