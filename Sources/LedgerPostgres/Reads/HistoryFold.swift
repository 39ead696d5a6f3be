import Foundation
import LedgerCore

/// The one fold of an order's stored events, every history read goes through: each event evolves the order, and its
/// entry keeps the state it left the order in.
struct HistoryFold {
    private(set) var order: Order?
    private(set) var entries: [HistoryEntry] = []
    /// The provider facts among the events, for a provider message decided against them (`recordProviderMessage`).
    private(set) var providerFacts: [ProviderNotified] = []

    /// Folds `stored`, keeping its entry unless it only leads up to a page (`keepingEntry` false).
    mutating func add(_ stored: StoredEvent, keepingEntry: Bool = true) throws {
        let recorded = try stored.recordedOrderEvent()
        order = OrderDecider.evolve(order, recorded)
        if case .providerNotified(let fact) = recorded.event { providerFacts.append(fact) }
        if keepingEntry { entries.append(HistoryEntry(event: stored, stateAfter: order?.state)) }
    }

    mutating func add(_ events: [StoredEvent]) throws {
        entries.reserveCapacity(entries.count + events.count)
        for stored in events { try add(stored) }
    }
}

extension Ledger {
    /// An order's events up to `limit`, each with the state it left the order in, and the order they fold to.
    func history(_ orderId: String, upTo limit: StreamLimit?) async throws -> HistoryFold {
        var fold = HistoryFold()
        try fold.add(try await store.read(.order(orderId), upTo: limit))
        return fold
    }
}

extension StoredEvent {
    /// The order event this stored row holds (stored data always parses: it was validated when appended).
    public func recordedOrderEvent() throws -> RecordedOrderEvent {
        guard stream.kind == .order else { throw NotAnOrderEvent(stream: stream, position: position) }
        return RecordedOrderEvent(
            orderId: stream.id, version: version, event: try OrderEvent(storedType: type, data: data), recordedAt: recordedAt)
    }
}

/// An event of another kind of stream, where an order's was expected.
public struct NotAnOrderEvent: Error, CustomStringConvertible {
    public let stream: StreamName
    public let position: Int64
    public var description: String { "the event at position \(position) is of \(stream), not of an order" }
}
