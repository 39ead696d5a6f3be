import Foundation
import LedgerCore
import PostgresNIO

/// What `Ledger.recordSubscription` answers: where the event landed, and the subscription right after it (for a
/// replay: as it was right after the original).
public struct RecordedSubscription: Sendable, Hashable {
    public var append: AppendResult
    public var subscription: Subscription
}

extension Ledger {
    /// Records one event of a subscription, through the append every stream uses (`EventStore.append`, with the
    /// subscription's projection, `SubscriptionProjection`): the event's data is read back by the rules every later
    /// read uses, the decision is `SubscriptionDecider.decide` on the subscription and the bindings of its
    /// transaction, and a refusal is thrown as `SubscriptionRefusal` (a 409). `eventId` is the idempotency key: a
    /// provider's notification delivered again is a replay.
    public func recordSubscription(
        _ subscriptionId: String, event: SubscriptionEvent, eventId: UUID, metadata: EventMetadata
    ) async throws -> RecordedSubscription {
        guard Identifier.isValid(subscriptionId) else {
            throw LedgerError.invalidEvent(field: "subscriptionId", message: "subscriptionId " + Identifier.rule)
        }
        do throws(EventValidationError) { _ = try SubscriptionEvent(type: event.type.rawValue, data: event.data) } catch {
            throw LedgerError.invalidEvent(field: error.field, message: error.message)
        }
        let newEvent = NewEvent(eventId: eventId, type: event.type.rawValue, data: event.data, metadata: metadata.json)
        let claims = event.transaction.map { [$0.transactionId] } ?? []
        let (append, subscription) = try await store.append(
            to: subscriptionId, of: SubscriptionProjection.self, events: [newEvent], claims: claims
        ) { snapshot in
            let read = snapshot.read
            if let refusal = SubscriptionDecider.decide(
                event, on: read.subscription, stream: subscriptionId, bindings: read.bindings)
            {
                throw refusal
            }
            return Subscription.evolve(
                read.subscription, event, stream: subscriptionId, version: snapshot.version + 1,
                recordedAt: snapshot.recordedAt)
        }
        if let subscription { return RecordedSubscription(append: append, subscription: subscription) }
        // A replay: the subscription as it was right after the original event.
        guard let original = try await self.subscription(subscriptionId, upTo: append.version) else {
            throw CorruptRow(column: "stream_id", value: subscriptionId)  // a replayed append always has stored events
        }
        return RecordedSubscription(append: append, subscription: original)
    }

    /// Links a subscription nobody owns yet to the order of its first purchase, and so to that order's account
    /// (`subscription.linked`): the order that holds one of its transactions, or whose `appAccountToken` one of them
    /// was bought with, the earliest purchase first. Nil when no order is found, or the subscription is owned already.
    @discardableResult
    public func linkToItsOrder(_ subscription: Subscription, metadata: EventMetadata) async throws -> RecordedSubscription? {
        guard subscription.accountId == nil else { return nil }
        let purchases = subscription.transactions.values.sorted { ($0.purchasedAt, $0.transactionId) < ($1.purchasedAt, $1.transactionId) }
        guard let owner = try await orderOwning(
            transactionIds: purchases.map(\.transactionId), appAccountTokens: purchases.compactMap(\.appAccountToken))
        else { return nil }
        let link = SubscriptionEvent.linked(orderId: owner.orderId, accountId: owner.accountId)
        let eventId = NameBasedUUID.version5(
            namespace: Self.subscriptionEvents, name: "linked:\(subscription.subscriptionId):\(owner.orderId)")
        do {
            return try await recordSubscription(subscription.subscriptionId, event: link, eventId: eventId, metadata: metadata)
        } catch let refusal as SubscriptionRefusal {
            // Linked meanwhile by another delivery (to this order: `already_linked`; to another: the refusal is the
            // story's, kept in the log). The notification itself was recorded either way.
            if refusal.code != "already_linked" {
                logger.warning("subscription not linked: \(refusal.message)", metadata: [
                    "subscriptionId": "\(subscription.subscriptionId)", "orderId": "\(owner.orderId)",
                ])
            }
            return nil
        }
    }

    /// The order that holds one of `transactionIds` (bound by its receipt), else one bought with one of
    /// `appAccountTokens`: its id and account.
    private func orderOwning(transactionIds: [String], appAccountTokens: [UUID]) async throws -> (orderId: String, accountId: String)? {
        try await client.query(
            """
            SELECT o.order_id, o.account_id FROM (
                SELECT order_id, 0 AS rank FROM order_transactions WHERE transaction_id = ANY(\(transactionIds)::text[])
                UNION ALL
                SELECT order_id, 1 AS rank FROM orders WHERE app_account_token = ANY(\(appAccountTokens)::uuid[])
            ) found JOIN orders o USING (order_id)
            ORDER BY found.rank, o.created_at, o.order_id
            LIMIT 1
            """, .reads, logger: logger
        ) { rows in
            var found: (orderId: String, accountId: String)?
            for try await row in rows.decode((String, String).self) { found = row }
            return found
        }
    }

    /// The namespace of the event ids the ledger derives for a subscription's own events.
    static let subscriptionEvents = UUID(uuid: (
        0x6f, 0x72, 0x64, 0x65, 0x72, 0x6c, 0x65, 0x64, 0x67, 0x65, 0x72, 0x2d, 0x73, 0x75, 0x62, 0x73))
}

/// What recording a provider's notification did to its subscription.
public enum SubscriptionMessageOutcome: Sendable, Hashable {
    /// Recorded; `version` is the subscription's after it (and after its link to an order, when one was made).
    case recorded(subscriptionId: String, version: Int)
    /// Recorded before: the same notification delivered again.
    case duplicate(subscriptionId: String)
    /// Not recorded: the subscription's rules (`SubscriptionRefusal`) or the event rules refused it. Answered 200 all
    /// the same: the provider sending it again would change nothing.
    case refused(subscriptionId: String, code: String, reason: String)
}

extension Ledger {
    /// Records what a provider's verified notification says about a subscription (`SubscriptionEvent`, from
    /// `AppStoreNotification.subscriptionEvent`), then links a subscription nobody owns to its order
    /// (`linkToItsOrder`), on a redelivery too (its order may have come since). The event id is derived from the
    /// notification's id: a notification delivered again is a replay, never a second event.
    public func recordSubscriptionNotification(
        _ subscriptionId: String, event: SubscriptionEvent, notificationId: String, provider: Provider, requestId: String?
    ) async throws -> SubscriptionMessageOutcome {
        let eventId = NameBasedUUID.version5(namespace: Self.subscriptionEvents, name: "\(provider.rawValue):\(notificationId)")
        return try await recordProviderSaid(
            subscriptionId, event: event, eventId: eventId, provider: provider, requestId: requestId, source: notificationId)
    }

    /// Records a provider's verified answer to the ledger's question about a subscription (`subscription.answered`,
    /// `said` carrying the signed words as evidence), as a notification is recorded: then links a subscription
    /// nobody owns to its order. The event id is derived from the answer's data: the same answer recorded again (a
    /// retry after a lost commit) is a replay.
    public func recordSubscriptionAnswer(
        _ subscriptionId: String, said: ProviderSaid, provider: Provider
    ) async throws -> SubscriptionMessageOutcome {
        let event = SubscriptionEvent.provider(.answered, said)
        let eventId = NameBasedUUID.version5(
            namespace: Self.subscriptionEvents, name: "\(provider.rawValue):answer:\(subscriptionId):" + event.data.canonicalJSON)
        return try await recordProviderSaid(
            subscriptionId, event: event, eventId: eventId, provider: provider, requestId: nil, source: "answer")
    }

    /// What a notification and an answer share: the event, then the link to its order; a refusal logged and answered.
    private func recordProviderSaid(
        _ subscriptionId: String, event: SubscriptionEvent, eventId: UUID, provider: Provider, requestId: String?,
        source: String
    ) async throws -> SubscriptionMessageOutcome {
        let metadata = EventMetadata(actor: "provider:\(provider.rawValue)", requestId: requestId)
        do {
            let recorded = try await recordSubscription(subscriptionId, event: event, eventId: eventId, metadata: metadata)
            // A replay answers the subscription as it was then: its link is decided on what it is now.
            var current = recorded.subscription
            if recorded.append.isReplay, let now = try await subscription(subscriptionId) { current = now }
            let linked = try await linkToItsOrder(current, metadata: metadata)
            if recorded.append.isReplay { return .duplicate(subscriptionId: subscriptionId) }
            return .recorded(subscriptionId: subscriptionId, version: linked?.append.version ?? recorded.append.version)
        } catch let refusal as SubscriptionRefusal {
            logger.warning("subscription \(event.type.rawValue) refused: \(refusal.message)", metadata: [
                "subscriptionId": "\(subscriptionId)", "source": "\(source)", "code": "\(refusal.code)",
            ])
            return .refused(subscriptionId: subscriptionId, code: refusal.code, reason: refusal.message)
        } catch LedgerError.invalidEvent(let field, let message) {
            logger.warning("subscription \(event.type.rawValue) refused: \(message)", metadata: [
                "subscriptionId": "\(subscriptionId)", "source": "\(source)", "field": "\(field)",
            ])
            return .refused(subscriptionId: subscriptionId, code: "invalid_request", reason: message)
        }
    }
}
