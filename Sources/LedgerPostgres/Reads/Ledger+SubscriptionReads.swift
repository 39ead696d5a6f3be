import Foundation
import LedgerCore
import PostgresNIO

extension Ledger {
    /// The subscription as projected now (its `subscriptions` row: owner and signed facts); nil when the ledger has
    /// never seen it. Read with the token epoch, which confirms a request's cached token.
    public func subscription(_ subscriptionId: String) async throws -> Subscription? {
        try await subscriptions(
            """
            SELECT \(unescaped: SubscriptionRows.columnsOfSub), e.epoch
            FROM api_token_epoch e LEFT JOIN subscriptions sub ON sub.subscription_id = \(subscriptionId)
            """
        ).first
    }

    /// The subscriptions an account owns, as projected now, by id. What entitles the account at a moment is each
    /// one's `entitlement(at:)`: derived on read from the signed facts, so never stale after a write, nor as time
    /// passes.
    public func subscriptions(ofAccount accountId: String) async throws -> [Subscription] {
        try await subscriptions(
            """
            SELECT \(unescaped: SubscriptionRows.columnsOfSub), e.epoch
            FROM api_token_epoch e LEFT JOIN subscriptions sub ON sub.account_id = \(accountId)
            ORDER BY sub.subscription_id
            """)
    }

    /// The subscription as it was right after its `version`th event (the fold of its stream up to it); nil when it
    /// has no event.
    public func subscription(_ subscriptionId: String, upTo version: Int) async throws -> Subscription? {
        var subscription: Subscription?
        for stored in try await store.read(StreamName(.subscription, subscriptionId), upTo: .version(version)) {
            let event = try SubscriptionStream.storedEvent(type: stored.type, dataText: Array(stored.data.canonicalJSON.utf8))
            subscription = SubscriptionStream.evolve(
                subscription, event, stream: subscriptionId, version: stored.version, recordedAt: stored.recordedAt)
        }
        return subscription
    }

    /// The subscriptions `query` selects (`SubscriptionRows.columnsOfSub`, then the token epoch: every query answers a
    /// row, of no subscription when none matches, so that the epoch confirms the request's token either way).
    private func subscriptions(_ query: PostgresQuery) async throws -> [Subscription] {
        let confirmsTokens = self.confirmsTokens
        let (found, epoch) = try await client.query(query, .reads, logger: logger) { rows in
            var found: [Subscription] = [], epoch: Int64?
            for try await row in rows {
                let columns = row.makeRandomAccess()
                if let subscription = try SubscriptionRows.decode(columns, from: 0) { found.append(subscription) }
                epoch = try columns[6].decode(Int64.self)
            }
            return (found, epoch)
        }
        if confirmsTokens, let epoch { try await TokenConfirmation.confirm(epoch: epoch) }
        return found
    }
}
