import Foundation

/// Whether a subscription entitles its owner at a moment, until when, and the signed transaction that proves it.
public struct Entitlement: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// A period that is paid for (or free, or family-shared) and not taken back covers the moment.
        case active
        /// The last period ended, billing is being retried, and the app's grace period still runs.
        case inGrace = "in_grace"
        /// The last period ended and billing is being retried, without a grace period (or after it).
        case billingRetry = "billing_retry"
        /// The last period ended and will not renew.
        case expired
        /// The period covering the moment was taken back without a refund: from a family member (`FAMILY_REVOKE`), or
        /// replaced by an upgrade whose new period the ledger has not seen yet.
        case revoked
        /// The period covering the moment (or the last one) was refunded, in full or in part.
        case refunded
        /// No transaction is known yet.
        case unknown
    }

    public var state: State
    /// Until when access continues (`active`: the period's end; `inGrace`: the grace period's end).
    public var until: Date?
    /// The transaction whose signed dates decide it: the period that covers the moment, or the last one.
    public var proof: SubscriptionTransaction?

    public var isEntitled: Bool { state == .active || state == .inGrace }

    public init(state: State, until: Date? = nil, proof: SubscriptionTransaction? = nil) {
        self.state = state
        self.until = until
        self.proof = proof
    }
}

extension Subscription {
    /// The entitlement at `moment`, from the signed facts' dates alone (never from a notification's type, nor from
    /// `inBillingRetry` alone: Apple has been seen to leave it false during a grace period).
    ///
    /// 1. Of the transactions bought by `moment` and not revoked by then, the one that ends last: while it has not
    ///    ended, `active` until its end.
    /// 2. Else, when the period that ends last of all those bought by `moment` was revoked by then: `refunded` (in
    ///    full or in part), or `revoked` (family sharing; an upgrade).
    /// 3. Else, while the grace period of the renewal info in force then (`renewalInfo(at:)`), after that last period,
    ///    still runs: `inGrace` until its end.
    /// 4. Else `billingRetry` while the provider retries, `expired` otherwise; `unknown` with no transaction.
    public func entitlement(at moment: Date) -> Entitlement {
        let bought = transactions.values.filter { $0.purchasedAt <= moment }
        let unrevoked = bought.filter { $0.revocation.map { $0.at > moment } ?? true }
        if let covering = Self.endingLast(unrevoked), covering.expiresAt > moment {
            return Entitlement(state: .active, until: covering.expiresAt, proof: covering)
        }
        guard let last = Self.endingLast(bought) else { return Entitlement(state: .unknown) }
        if let revocation = last.revocation, revocation.at <= moment {
            let refunded = revocation.kind == .refundFull || revocation.kind == .refundProrated
            return Entitlement(state: refunded ? .refunded : .revoked, proof: last)
        }
        let info = renewalInfo(at: moment)
        if let graceEnds = info?.gracePeriodExpiresAt, graceEnds > moment, graceEnds > last.expiresAt {
            return Entitlement(state: .inGrace, until: graceEnds, proof: last)
        }
        let retrying = info.map { $0.inBillingRetry && $0.signedAt >= last.purchasedAt } ?? false
        return Entitlement(state: retrying ? .billingRetry : .expired, proof: last)
    }

    /// The transaction whose period ends last (ties: the greater transaction id, whatever the dictionary's order).
    static func endingLast(_ transactions: [SubscriptionTransaction]) -> SubscriptionTransaction? {
        transactions.max { ($0.expiresAt, $0.transactionId) < ($1.expiresAt, $1.transactionId) }
    }
}
