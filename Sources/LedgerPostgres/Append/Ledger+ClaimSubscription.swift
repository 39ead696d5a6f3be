import Foundation
import LedgerCore

/// What a claim of a subscription did (`Ledger.claimSubscription`).
public enum SubscriptionClaimOutcome: Sendable, Hashable {
    /// Nobody owned it: the account owns it now (`subscription.claimed`; for a retry, as it was right after).
    case claimed(RecordedSubscription)
    /// Another account owned it, and the `transfer` policy moved it (`subscription.transferred`).
    case transferred(from: String, RecordedSubscription)
    /// The account owns it already: nothing was recorded.
    case alreadyOwned(Subscription)
}

extension Ledger {
    /// An account claims a subscription with one of its transactions, verified by the caller against the provider's
    /// signature (a restore, a login on another device, a family member, a purchase made outside the app). Nobody owns
    /// it: the account does now (`subscription.claimed`). The account owns it: nothing to record. Another account
    /// owns it: under `keep`, the claim is refused `account_mismatch` (thrown) and kept in the refusal log, listed as
    /// a `refused_claim` anomaly; under `transfer`, it is moved (`subscription.transferred`). Either event carries the
    /// signed transaction, merged into the subscription's facts like a notification's.
    ///
    /// The event ids are derived from the subscription, the accounts and the transaction shown (its id and when it
    /// was signed): the same claim sent again is a replay, never a second event; the same transaction signed again
    /// later (a restore the next day) is a new claim, which the account that owns it makes to no effect.
    public func claimSubscription(
        _ subscriptionId: String, accountId: String, transaction: SubscriptionTransaction,
        policy: SubscriptionTransferPolicy, metadata: EventMetadata
    ) async throws -> SubscriptionClaimOutcome {
        guard Identifier.isValid(accountId) else {
            throw LedgerError.invalidEvent(field: "accountId", message: "accountId " + Identifier.rule)
        }
        let claim = SubscriptionEvent.claimed(accountId: accountId, transaction: transaction)
        do {
            let eventId = Self.claimEventId("claimed", subscriptionId, accountId, transaction)
            return .claimed(try await recordSubscription(subscriptionId, event: claim, eventId: eventId, metadata: metadata))
        } catch SubscriptionRefusal.alreadyOwned {
            guard let current = try await subscription(subscriptionId) else {
                throw CorruptRow(column: "subscription_id", value: subscriptionId)  // owned: it has events
            }
            return .alreadyOwned(current)
        } catch SubscriptionRefusal.accountMismatch(let owner, let claimant) where policy == .transfer {
            let transfer = SubscriptionEvent.transferred(from: owner, to: claimant, transaction: transaction)
            let eventId = Self.claimEventId("transferred:\(owner)", subscriptionId, accountId, transaction)
            return .transferred(
                from: owner, try await recordSubscription(subscriptionId, event: transfer, eventId: eventId, metadata: metadata))
        } catch let refusal as SubscriptionRefusal {
            if case .accountMismatch = refusal {
                try await RefusalLog(client: client, logger: store.logger).record(
                    refusal, of: claim, subscriptionId: subscriptionId, actor: metadata.actor)
            }
            throw refusal
        }
    }

    /// The backend credited the period of `transaction` (verified by the caller against the provider's signature) to
    /// `accountId`, which must own the subscription (`subscription.granted`). Each period is credited once
    /// (`already_granted` after); the same grant sent again is a replay. A period credited after it ended is recorded
    /// all the same, and listed (`access_after_expiry`): the ledger keeps what the backend did.
    public func grantSubscriptionPeriod(
        _ subscriptionId: String, accountId: String, transaction: SubscriptionTransaction, metadata: EventMetadata
    ) async throws -> RecordedSubscription {
        guard Identifier.isValid(accountId) else {
            throw LedgerError.invalidEvent(field: "accountId", message: "accountId " + Identifier.rule)
        }
        let grant = SubscriptionEvent.granted(accountId: accountId, transaction: transaction)
        return try await recordSubscription(
            subscriptionId, event: grant, eventId: Self.claimEventId("granted", subscriptionId, accountId, transaction),
            metadata: metadata)
    }

    private static func claimEventId(
        _ what: String, _ subscriptionId: String, _ accountId: String, _ transaction: SubscriptionTransaction
    ) -> UUID {
        NameBasedUUID.version5(
            namespace: subscriptionEvents,
            name: "\(what):\(subscriptionId):\(accountId):\(transaction.transactionId)@\(transaction.signedAt.timeIntervalSince1970)")
    }
}
