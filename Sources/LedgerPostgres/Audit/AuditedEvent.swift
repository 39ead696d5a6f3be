import Foundation
import LedgerCore

/// A stored event with its seal: the bytes its hash covers, its hash, and the hash of the order's event before it.
public struct AuditedEvent: Sendable, Hashable {
    public var event: StoredEvent
    /// Nil for an event stored before sealing existed (or one whose seal was removed).
    public var canonical: [UInt8]?
    public var hash: [UInt8]?
    /// The hash of version − 1 of the same order (nil for version 1, or when that event is missing).
    public var previousHash: [UInt8]?

    /// The first thing wrong with this event's seal, or nil when it is intact: the canonical bytes say what the
    /// row's columns say, and the hash is `SHA-256(previous hash ‖ canonical bytes)`.
    public var sealProblem: String? {
        guard let canonical, let hash else { return "the event is not sealed (no canonical bytes or hash)" }
        guard event.version == 1 || previousHash != nil else { return "the event before it (version \(event.version - 1)) is missing" }
        let stated = EventSeal.canonicalValue(
            orderId: event.orderId, version: event.version, eventId: event.eventId, type: event.type, data: event.data,
            metadata: event.metadata, occurredAt: event.occurredAt, recordedAt: event.recordedAt)
        guard (try? JSONValue(parsing: canonical)) == stated else {
            return "the stored row differs from the bytes that were hashed (order id, version, event id, type, data, metadata or times changed)"
        }
        guard EventSeal.hash(previous: previousHash, canonical: canonical) == hash else {
            return "the hash does not match SHA-256(previous hash ‖ canonical bytes)"
        }
        return nil
    }
}
