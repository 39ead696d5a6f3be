import Foundation
import LedgerCore
import PostgresNIO

/// What recording a provider's verified message came to.
public enum ProviderMessageOutcome: Sendable, Hashable {
    /// Recorded on the order: `provider.notified`, then the events it led to (`followed`); `refusal` says why
    /// the follow-up stopped short, if it did (the fact itself is never refused).
    case recorded(orderId: String, followed: [EventType], refusal: Refusal?)
    /// Already recorded (a provider's retry): nothing new was written.
    case duplicate(orderId: String?)
    /// No order matches: kept in `provider_messages` as `unknown_provider_transaction`.
    case unmatched
    /// The provider signed a value the event rules refuse (`field`, `reason`): the message is kept verbatim in
    /// `provider_messages` and listed for finance (`refused_provider_message`); nothing is recorded on the order.
    case refused(orderId: String?, field: String, reason: String)
}

/// A verified message the ledger cannot even keep: its id (or its evidence) is not one a message can be stored under.
/// Refused, and answered as a bad request in the provider's format; nothing is written.
public struct UnkeepableProviderMessage: Error, Sendable, Hashable {
    public let field: String
    public let message: String
}

extension Ledger {
    /// How often a message is read and decided again when its order moved meanwhile.
    static let providerMessageAttempts = 8

    /// Namespace of the event ids derived from a provider message (`provider:notificationId:index`): a provider's
    /// retry derives the same ids, so two deliveries racing on one order store the message once.
    static let providerEventNamespace = UUID(uuid: (
        0x3b, 0x8e, 0x51, 0x0c, 0x7a, 0x24, 0x4f, 0x19, 0x9d, 0x66, 0x0e, 0x42, 0xb7, 0x1a, 0xc3, 0x58))

    /// Records a provider's verified message: on the order it matches (by the order id it names, a transaction
    /// bound to an order, then the `appAccountToken`), followed by what it leads to (`ProviderFollowUp`), all in one
    /// append; or, matching no order, in `provider_messages` alone. Idempotent by the provider's message id.
    ///
    /// The fact passes the event rules first, as every event does: a value the rules refuse (signed by the provider,
    /// so the message is genuine) would be an event its order's history could never read back. Such a message is kept
    /// as it came, listed for finance, and not applied (`refused`).
    public func recordProviderMessage(_ message: ProviderMessage, requestId: String? = nil) async throws -> ProviderMessageOutcome {
        let fact = message.fact
        let refusal = try Self.refusal(of: fact)
        if let seen = try await recordedProviderMessage(fact) { return .duplicate(orderId: seen) }
        let matched = try await orderMatching(message.match)
        if let refusal {
            let orderId = matched ?? message.match.orderId
            try await keep(message, namedOrderId: orderId, refused: refusal.message)
            store.logger.warning("provider message kept, not applied: \(refusal.message)", metadata: [
                "provider": "\(fact.provider.rawValue)", "notificationId": "\(fact.notificationId)", "field": "\(refusal.field)",
            ])
            return .refused(orderId: orderId, field: refusal.field, reason: refusal.message)
        }
        guard let orderId = matched else {
            try await keep(message, namedOrderId: message.match.orderId, refused: nil)
            return .unmatched
        }
        let metadata = EventMetadata(actor: "provider:\(fact.provider.rawValue)", requestId: requestId)
        // The order's history is read once; when the order moves meanwhile, only the events appended since are read.
        var fold = try await history(orderId, upTo: nil)
        for _ in 0..<Self.providerMessageAttempts {
            guard let order = fold.order else { break }
            let facts = fold.providerFacts
            if facts.contains(where: { $0.provider == fact.provider && $0.notificationId == fact.notificationId }) {
                return .duplicate(orderId: orderId)
            }
            let followUp = ProviderFollowUp.events(for: order, facts: facts + [fact])
            do {
                try await recordFact(fact, followedBy: followUp.events, on: order, metadata: metadata)
                return .recorded(orderId: orderId, followed: followUp.events.map(\.type), refusal: followUp.refusal)
            } catch let refusal as Refusal {
                // The follow-up was refused against what the append read (a transaction another order holds):
                // the fact alone is recorded, and the refusal (already in the refusal log) is the answer's.
                do {
                    try await recordFact(fact, followedBy: [], on: order, metadata: metadata)
                    return .recorded(orderId: orderId, followed: [], refusal: refusal)
                } catch EventStoreError.versionConflict, EventStoreError.idempotencyConflict {}
            } catch EventStoreError.versionConflict, EventStoreError.idempotencyConflict {
                // The order moved (or the same message is being recorded by another delivery): read what is new.
            }
            try fold.add(try await store.read(.order(orderId), after: order.version))
        }
        throw EventStoreError.contended(stream: .order(orderId))
    }

    private func recordFact(
        _ fact: ProviderNotified, followedBy followUp: [OrderEvent], on order: Order, metadata: EventMetadata
    ) async throws {
        let events = ([.providerNotified(fact)] + followUp).enumerated().map { index, event in
            IdentifiedEvent(
                eventId: NameBasedUUID.version5(
                    namespace: Self.providerEventNamespace, name: "\(fact.provider.rawValue):\(fact.notificationId):\(index)"),
                event: event, occurredAt: nil)
        }
        _ = try await record(orderId: order.orderId, events: events, expectedVersion: .exactly(order.version), metadata: metadata)
    }

    /// The order a message was recorded on, if it was recorded (nil order id: kept unmatched); nil if it was not.
    private func recordedProviderMessage(_ fact: ProviderNotified) async throws -> String?? {
        try await client.query(
            """
            SELECT order_id FROM provider_messages
            WHERE provider = \(fact.provider.rawValue) AND notification_id = \(fact.notificationId)
            """, .reads, logger: store.logger
        ) { rows in
            for try await orderId in rows.decode(String?.self) { return .some(orderId) }
            return nil
        }
    }

    /// The order a message names or implies: the order id it names, else the order its transaction (then original
    /// transaction) is bound to, else the order holding its appAccountToken.
    private func orderMatching(_ match: ProviderMatch) async throws -> String? {
        let transactions = match.transactionIds
        return try await client.query(
            """
            SELECT order_id FROM (
                SELECT order_id, 0 AS rank FROM orders WHERE order_id = \(match.orderId)
                UNION ALL
                SELECT order_id, 1 + array_position(\(transactions)::text[], transaction_id)
                FROM order_transactions WHERE transaction_id = ANY(\(transactions)::text[])
                UNION ALL
                SELECT order_id, 1000 FROM orders WHERE app_account_token = \(match.appAccountToken)
            ) AS found ORDER BY rank, order_id LIMIT 1
            """, .reads, logger: store.logger
        ) { rows in
            for try await orderId in rows.decode(String.self) { return orderId }
            return nil
        }
    }

    /// Why the event rules refuse `fact`, if they do; throws when the message cannot even be kept (its id is the key
    /// of `provider_messages`, and PostgreSQL stores no NUL character).
    static func refusal(of fact: ProviderNotified) throws -> EventValidationError? {
        let event = OrderEvent.providerNotified(fact)
        do throws(EventValidationError) {
            try event.validatedForStorage()
            return nil
        } catch {
            let keys = ["data.provider", "data.notificationId"]
            if keys.contains(error.field) || error.field.hasPrefix("data.evidence") || event.data.canonicalJSON.contains("\\u0000") {
                throw UnkeepableProviderMessage(field: error.field, message: error.message)
            }
            return error
        }
    }

    /// Keeps a message no order's stream holds: one that matches no order, or whose fact the rules refuse.
    private func keep(_ message: ProviderMessage, namedOrderId: String?, refused: String?) async throws {
        let fact = message.fact
        _ = try await client.query(
            """
            INSERT INTO provider_messages (provider, notification_id, order_id, named_order_id, effect, notification_type,
                                           transaction_id, amount_value, currency, signed_at, recorded_at, unmatched_data,
                                           refused)
            VALUES (\(fact.provider.rawValue), \(fact.notificationId), NULL, \(namedOrderId), \(fact.effect.rawValue),
                    \(fact.notificationType), \(fact.transactionId), \(fact.amount?.value), \(fact.amount?.currency),
                    \(Timestamp(fact.signedAt)), now(), \(OrderEvent.providerNotified(fact).data.canonicalJSON)::jsonb, \(refused))
            ON CONFLICT (provider, notification_id) DO NOTHING
            """, logger: store.logger
        ) { _ in }
    }
}
