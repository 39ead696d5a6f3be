import Foundation

/// A kind of stream in the event log. A stream is named by its kind and an id (`StreamName`); the store keeps the
/// kind beside every stream and every event (schema/021), and reads, hashes, feeds and exports any kind alike. What a
/// kind's events mean and how they fold is its `StreamDomain`.
///
/// The order is the first kind. A new kind is a constant here, added to `all`, a `StreamDomain` for its events, and
/// its projection in LedgerPostgres (docs/architecture.md, "Where to add… a stream kind").
public struct StreamKind: Hashable, Sendable, CustomStringConvertible {
    /// As stored (`streams.kind`, `events.kind`): lower case, letters and underscores (the schema checks it).
    public let name: String

    /// A kind by its stored name, known to this build or not (`all`): the store reads every row it holds.
    public init(_ name: String) { self.name = name }

    /// One order's events: created, paid, verified, granted, finished, and the side roads (`OrderEvent`).
    public static let order = StreamKind("order")

    /// The kinds this build knows. An event of another kind (written by a newer build) is read, hashed, fed and
    /// exported like any other, and reported, never folded, by the checks that fold.
    public static let all: [StreamKind] = [.order, .subscription]

    public var description: String { name }
}

/// A stream: its kind and its id within the kind (an order's id, for an order).
public struct StreamName: Hashable, Sendable, CustomStringConvertible {
    public let kind: StreamKind
    public let id: String

    public init(_ kind: StreamKind, _ id: String) {
        self.kind = kind
        self.id = id
    }

    public static func order(_ orderId: String) -> StreamName { StreamName(.order, orderId) }

    public var description: String { "\(kind.name) \(id)" }
}

/// What one kind's events are and how they fold: its stored events parsed back, and each evolving its state. The
/// store's folds (rebuild, verify) are written once over a `StreamDomain`; a kind's decisions (what may follow what)
/// are its own code's, called by the path that records it.
public protocol StreamDomain: Sendable {
    associatedtype Event: Sendable
    associatedtype State: Sendable

    static var kind: StreamKind { get }

    /// A stored event of this kind, by the rules it was written under (its type and its data's JSON text).
    static func storedEvent(type: String, dataText: [UInt8]) throws -> Event

    /// The stream's state after `event`, its `version`th, recorded at `recordedAt` (nil state: no event yet).
    static func evolve(_ state: consuming State?, _ event: Event, stream id: String, version: Int, recordedAt: Date) -> State?
}

/// The order's events and fold, as the store's folds see them.
public enum OrderStream: StreamDomain {
    public static let kind = StreamKind.order

    public static func storedEvent(type: String, dataText: [UInt8]) throws -> OrderEvent {
        try OrderEvent(storedType: type, dataText: dataText)
    }

    public static func evolve(
        _ state: consuming Order?, _ event: OrderEvent, stream id: String, version: Int, recordedAt: Date
    ) -> Order? {
        OrderDecider.evolve(state, RecordedOrderEvent(orderId: id, version: version, event: event, recordedAt: recordedAt))
    }
}
