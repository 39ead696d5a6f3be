import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The order ledger: records events through the domain's rules and answers what happened. The one entry point
/// the HTTP API and the CLI share.
///
/// Recording is the event store's append: one read of the stream and the order's projection, idempotent retries
/// answered first (a retry of an accepted event gets the original result even if the order has moved on), then the
/// domain decides each event against the order as read, and one write stores the events with the new projection
/// rows. A refusal throws a `Refusal` and nothing is written.
public struct Ledger: Sendable {
    let store: EventStore
    let rows: OrderRows

    init(client: PostgresClient, logger: Logger = Logger(label: "ledger")) {
        self.init(store: EventStore(client: client, logger: logger), logger: logger)
    }

    private init(store: EventStore, logger: Logger) {
        self.store = store
        self.rows = OrderRows(logger: logger)
    }

    /// The ledger for reads on a streaming replica (`ReadReplicas`): the same reads, except that the token epoch
    /// they return confirms nothing — a replica's may lag — so a cached token is confirmed on the primary instead.
    static func reading(from replica: PostgresClient, logger: Logger = Logger(label: "ledger")) -> Ledger {
        Ledger(store: EventStore(client: replica, logger: logger, confirmsTokens: false), logger: logger)
    }

    var client: PostgresClient { store.client }

    /// Validates and records events for one order, all or nothing.
    public func record(
        orderId: String, events submissions: [Submission], expectedVersion: ExpectedVersion = .any, metadata: EventMetadata
    ) async throws -> Recorded {
        guard Identifier.isValidOrderId(orderId) else {
            throw LedgerError.invalidEvent(field: "orderId", message: "orderId " + Identifier.orderRule)
        }
        let events = try Self.parse(submissions)
        return try await record(
            orderId: orderId,
            events: zip(submissions, events).map { IdentifiedEvent(eventId: $0.eventId, event: $1, occurredAt: $0.occurredAt) },
            expectedVersion: expectedVersion, metadata: metadata)
    }

    /// Records validated events: what `record(orderId:events:…)` does once the submissions parse, and what a
    /// provider's verified message is recorded through (`recordProviderMessage`).
    func record(
        orderId: String, events identified: [IdentifiedEvent], expectedVersion: ExpectedVersion, metadata: EventMetadata
    ) async throws -> Recorded {
        let events = identified.map(\.event)
        let newEvents = identified.map { event in
            NewEvent(
                eventId: event.eventId, type: event.event.type.rawValue, data: event.event.data, metadata: metadata.json,
                occurredAt: event.occurredAt)
        }
        // The last gate before the log, for the events no client parsed (a provider's fact, a follow-up): the data
        // about to be stored is read back by the parser every later read uses (`OrderEvent.validatedForStorage`).
        for (index, event) in newEvents.enumerated() {
            do throws(EventValidationError) { _ = try OrderEvent(type: event.type, data: event.data) } catch {
                let prefix = newEvents.count == 1 ? "" : "events[\(index)]."
                throw LedgerError.invalidEvent(field: prefix + error.field, message: prefix + error.message)
            }
        }
        let append: AppendResult, order: Order?
        do {
            (append, order) = try await store.append(
                to: orderId, expectedVersion: expectedVersion, events: newEvents,
                transactionIds: events.compactMap(\.transactionId)
            ) { snapshot in
                // Unreachable (the decider refuses anything but order.created on no order), but a throw, never a trap.
                guard let order = try OrderBatch.decide(events, from: snapshot.start) else {
                    throw CorruptRow(column: "order_id", value: orderId)
                }
                return order
            }
        } catch let refusal as RefusedEvent {
            // Evidence first: if the log cannot be written, the caller gets the database error (a 503) and retries,
            // rather than a refusal nobody in finance will ever see.
            try await RefusalLog(client: client, logger: store.logger).record(
                refusal.refusal, of: refusal.event, orderId: orderId, actor: metadata.actor)
            throw refusal.refusal
        }
        if let order { return Recorded(append: append, order: order) }
        // A replay: the order as it was right after the original append.
        guard let original = try await history(orderId, upTo: .version(append.version)).order else {
            throw CorruptRow(column: "order_id", value: orderId)  // a replayed append always has stored events
        }
        return Recorded(append: append, order: original)
    }

    /// Parses each submission into a domain event, naming the failing field with its place in the batch.
    static func parse(_ submissions: [Submission]) throws -> [OrderEvent] {
        var seen = Set<UUID>()
        return try submissions.enumerated().map { index, submission in
            guard seen.insert(submission.eventId).inserted else { throw LedgerError.duplicateEventId(submission.eventId) }
            let prefix = submissions.count == 1 ? "" : "events[\(index)]."
            let event: OrderEvent
            do throws(EventValidationError) {
                event = try OrderEvent(type: submission.type, data: submission.data)
            } catch {
                switch error {
                case .unknownEventType(let type):
                    throw LedgerError.unknownEventType(field: prefix + "type", type: type)
                case .invalidField(let field, let message):
                    throw LedgerError.invalidEvent(field: prefix + field, message: prefix + message)
                }
            }
            // Only the ledger speaks for a provider, from a message whose signature it checked.
            guard event.type != .providerNotified else {
                throw LedgerError.invalidEvent(
                    field: prefix + "type",
                    message: prefix + "type provider.notified is recorded by the ledger itself, from a provider's verified message")
            }
            return event
        }
    }

    /// An order's events up to `limit`, each with the state it left the order in, and the order they fold to.
    func history(_ orderId: String, upTo limit: StreamLimit?) async throws -> HistoryFold {
        var fold = HistoryFold()
        try fold.add(try await store.read(orderId, upTo: limit))
        return fold
    }
}

extension StoredEvent {
    /// The domain event this stored row holds (stored data always parses: it was validated when appended).
    public func recordedOrderEvent() throws -> RecordedOrderEvent {
        RecordedOrderEvent(
            orderId: orderId, version: version, event: try OrderEvent(storedType: type, data: data), recordedAt: recordedAt)
    }
}
