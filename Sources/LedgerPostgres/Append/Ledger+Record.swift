import Foundation
import LedgerCore
import Logging
import PostgresNIO

// The append path, top to bottom. Every event, whoever brings it (a client's POST, a provider's verified message, a
// follow-up the ledger derives from it), is recorded by these steps, all in this folder unless named:
//  1. `record(orderId:events:…)` (below): the order id is checked, and each submission is parsed by the event rules
//     (`OrderEvent(type:data:)`, LedgerCore); `provider.notified` is the ledger's own, refused from a client.
//  2. `record(orderId:events:…)` for parsed events (below), the gate: each event's data, exactly as it will be
//     stored, is read back by the parser every later read uses. A provider's message joins here
//     (`recordProviderMessage`, Ledger+ProviderMessages.swift).
//  3. `EventStore.append` (EventStore+Append.swift, for any kind; the order's part is `OrderProjection`, Orders/), on
//     one pooled connection within the request's deadline: **read** one snapshot (`AppendStatements.read`,
//     AppendStatements.swift): the stream's head, the database clock, which event ids are stored, the token epoch,
//     and the order's: its row, the bindings of the transactions named. An
//     order this node wrote last, or a batch that creates its order, starts from memory instead (`RecentStreams`),
//     and falls back to the read whenever the write's guards or the decision would not take it as it is. Its write
//     (8) is grouped with the other appends from memory waiting meanwhile: one statement for all (`AppendGroup`).
//  4. The request's cached token is confirmed against the epoch read (`TokenConfirmation`, Tokens/).
//  5. A retry whose event ids are all stored with the same content gets the original result; nothing is written.
//  6. The expected version is checked (`EventStoreError.versionConflict`).
//  7. The domain decides the batch: `OrderBatch.decide` → `OrderDecider.decide` (LedgerCore). This is where a grant
//     is checked against its order and against every other order holding its transaction.
//  8. **write**, one statement (`AppendStatements.write`): the stream's version bump, guarded by the version read;
//     the events sealed onto the order's hash chain (`EventSeal`, LedgerCore); the order's row (`OrderRows`,
//     Orders/); the transaction's binding. A writer that lost a race wrote nothing: back to 3, queued behind the
//     order's advisory lock.
//  9. A refusal at 7 is kept in the refusal log (`RefusalLog`, Finance/) and thrown as the plain `Refusal` (a 409).
// 10. A replay (5) answers the order as it was right after the original append (`history(upTo:)`, Reads/).

extension Ledger {
    /// Validates and records events for one order, all or nothing (steps 1 to 10 above).
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
                to: orderId, of: OrderProjection.self, expectedVersion: expectedVersion, events: newEvents,
                claims: events.compactMap(\.transactionId)
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
}

extension AppendSnapshot where Read == OrderProjection.Read {
    /// Where the domain's decision of the batch starts (`OrderBatch`).
    var start: OrderBatch.Start {
        OrderBatch.Start(
            orderId: stream.id, order: read.order, version: version, recordedAt: recordedAt, bindings: read.bindings)
    }
}
