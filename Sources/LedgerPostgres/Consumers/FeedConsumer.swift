import Foundation
import PostgresNIO

/// A consumer of the feed: a name, under which its place in the feed is kept (`feed_consumers`, schema/022), and what
/// it does with each page of events, every kind of stream, in feed order. A page is handled, then the consumer's
/// position moves past it: a page whose handling throws is handled again on the next round, so every event is handled
/// at least once, and, unless a handling failed or a node died mid-page, once.
public struct FeedConsumer: Sendable {
    /// Lower case letters, digits, `_`, `.` and `-`, starting with a letter; at most 63 characters (the schema checks).
    public let name: String
    let handling: Handling
    /// SQL for the earliest recording time of an event the consumer does anything with (NULL: none), when it knows
    /// one: the events before the first recorded since then are passed over unread (`FeedConsumers.passOver`) — the
    /// webhooks' queueing when its first endpoint is added to a long ledger — and a page hands over none recorded
    /// before it. Nil: every event is handed over.
    let passesOverRecordedBefore: String?

    enum Handling: Sendable {
        /// An effect outside this database (a webhook, an export): handled, then advanced — at least once.
        case thenAdvance(@Sendable ([StoredEvent]) async throws -> Void)
        /// An effect in this database, written on the connection in the transaction that advances the consumer:
        /// both or neither are committed — exactly once.
        case inTransaction(@Sendable ([StoredEvent], PostgresConnection) async throws -> Void)
    }

    /// A consumer whose effect is outside the ledger's database: every event is handled at least once.
    public init(name: String, handle: @escaping @Sendable ([StoredEvent]) async throws -> Void) {
        self.name = name
        self.handling = .thenAdvance(handle)
        self.passesOverRecordedBefore = nil
    }

    /// A consumer whose effect is written in the ledger's database, in the transaction that moves its position:
    /// every event is handled exactly once.
    init(
        name: String, passesOverRecordedBefore: String? = nil,
        handleInTransaction: @escaping @Sendable ([StoredEvent], PostgresConnection) async throws -> Void
    ) {
        self.name = name
        self.handling = .inTransaction(handleInTransaction)
        self.passesOverRecordedBefore = passesOverRecordedBefore
    }

    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 63, ("a"..."z").contains(first) else {
            return false
        }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "_.-".unicodeScalars.contains($0) }
    }
}

/// Where a consumer is (`ledger consumers`): its position, how many events it has handled, how far behind the feed
/// it is, and who holds it.
public struct FeedConsumerStatus: Sendable, Hashable {
    public var name: String
    /// The last event handled (nil: none yet).
    public var position: Int64?
    public var handled: Int64
    /// Events in the log after its position, and how long ago the oldest of them was recorded (0: none).
    public var lagEvents: Int64
    public var lagSeconds: Double
    /// The node holding it, until when (nil: nobody).
    public var leasedBy: String?
    public var leasedUntil: Date?
    public var advancedAt: Date?
}
