import Foundation
import LedgerCore

/// What an append expects the order's stream version to be: the optimistic-concurrency check.
public enum ExpectedVersion: Sendable, Hashable, CustomStringConvertible {
    /// Append whatever the current version is.
    case any
    /// Append only if the order has no events yet.
    case noStream
    /// Append only if the order's last event has exactly this version.
    case exactly(Int)

    func admits(_ actual: Int) -> Bool {
        switch self {
        case .any: true
        case .noStream: actual == 0
        case .exactly(let version): actual == version
        }
    }

    public var description: String {
        switch self {
        case .any: "any"
        case .noStream: "no stream"
        case .exactly(let version): "\(version)"
        }
    }
}

/// An event to append; `eventId` is its idempotency key.
struct NewEvent: Sendable, Hashable {
    var eventId: UUID
    var type: String
    var data: JSONValue
    var metadata: JSONValue
    var occurredAt: Date?

    init(eventId: UUID, type: String, data: JSONValue, metadata: JSONValue = .object([:]), occurredAt: Date? = nil) {
        self.eventId = eventId
        self.type = type
        self.data = data
        self.metadata = metadata
        self.occurredAt = occurredAt
    }
}

/// An event as the store holds it, of any kind of stream.
public struct StoredEvent: Sendable, Hashable {
    public var position: Int64
    public var stream: StreamName
    public var version: Int
    public var eventId: UUID
    public var type: String
    public var data: JSONValue
    public var metadata: JSONValue
    public var occurredAt: Date?
    public var recordedAt: Date
}

/// A place in the feed: an event's writing transaction (as text) and its position, the order the feed reads in.
struct FeedCursor: Sendable, Hashable {
    var transactionId: String
    var position: Int64
}

/// Where one appended event landed.
public struct AppendedEvent: Sendable, Hashable {
    public var eventId: UUID
    public var version: Int
    public var position: Int64
}

/// The outcome of an append: the events' versions and positions, and whether it replayed an earlier append.
public struct AppendResult: Sendable, Hashable {
    public var stream: StreamName
    public var events: [AppendedEvent]
    /// True when every event was already stored: nothing was written and these are the original versions.
    public var isReplay: Bool
    /// The stream's version after the appended (or replayed) events.
    public var version: Int { events.map(\.version).max() ?? 0 }
}

/// The store's typed refusals.
public enum EventStoreError: Error, Sendable, Hashable {
    /// The stream is not at the version the caller expected; nothing was written.
    case versionConflict(stream: StreamName, expected: ExpectedVersion, actual: Int)
    /// The event id is already stored with a different stream, type or data (or the batch only partly matches);
    /// `stored` is the stream that holds it.
    case idempotencyConflict(eventId: UUID, stored: StreamName)
    /// A feed cursor that names no stored event.
    case unknownPosition(Int64)
    /// An append needs at least one event.
    case emptyAppend
    /// The append lost the race for the stream every time it tried; nothing was written. The caller retries.
    case contended(stream: StreamName)
}

/// Which prefix of an order's stream to read.
enum StreamLimit: Sendable, Hashable {
    /// Events up to and including this version.
    case version(Int)
    /// Events recorded at or before this moment.
    case recordedAt(Date)
}
