/// What a claim of a subscription by another account than its owner does (`serve --subscription-transfer`). The same
/// on every node of a deployment: it is the operator's rule, not a request's.
public enum SubscriptionTransferPolicy: String, Sendable, Hashable, CaseIterable {
    /// Refused (`account_mismatch`, a 409) and listed for finance (anomaly `refused_claim`): a restore or a login on
    /// another account never moves what one account paid for. The default.
    case keep
    /// Moved to the claiming account (`subscription.transferred`, with the signed transaction it showed and the actor
    /// who asked): for apps whose accounts follow the Apple ID that pays.
    case transfer
}
