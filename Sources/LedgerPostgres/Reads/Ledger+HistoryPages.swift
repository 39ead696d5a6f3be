import Foundation
import LedgerCore
import PostgresNIO

/// One page of "what happened to this order": at most a page of events, each with the state it left the order in.
public struct HistoryPage: Sendable, Hashable {
    public var orderId: String
    public var asOf: Date?
    public var entries: [HistoryEntry]
    /// The order after this page's last event (after the events before the page when it is empty); on the last page,
    /// the order as of `asOf`. Nil when it did not exist yet.
    public var order: Order?
    /// The version to pass as `after` for the next page; nil on the last page.
    public var next: Int?
    /// The order's stream version when the page was read (nil for an empty page): the page is the same answer for as
    /// long as the stream stays at this version (`Ledger.streamVersion`), since events never change and a new one
    /// only ever takes a higher version.
    public var streamVersion: Int?
}

extension Ledger {
    /// A page of an order's history: at most `limit` events after version `after` (only what had been recorded by
    /// `asOf` when given). Nil when the order has never existed.
    ///
    /// Nothing new is stored for paging: each event's state needs the fold of every event before it, so the events
    /// before the page are folded here, server-side, streamed one row at a time (constant memory; time grows with
    /// `after`), and the page's own events are read by version range. Both reads run on one connection within the
    /// request's deadline. Events are never changed and a new one only ever takes a higher version, so the events
    /// up to `after` are the same for every page, and page by page the story equals the whole.
    public func history(_ orderId: String, asOf: Date? = nil, after: Int, limit: Int) async throws -> HistoryPage? {
        let store = self.store
        let after = max(0, after), limit = max(1, limit)
        return try await client.withConnection(within: Deadline.remaining, .reads) { connection in
            var fold = HistoryFold()
            var before = 0
            if after > 0 {
                try await store.forEach(.order(orderId), through: after, asOf: asOf, on: connection) { stored in
                    try fold.add(stored, keepingEntry: false)
                    before += 1
                }
            }
            // One more than the page, to know whether another follows.
            let read = limit == Int.max ? limit : limit + 1
            var (events, streamVersion) = try await store.readPage(.order(orderId), after: after, asOf: asOf, limit: read, on: connection)
            let more = events.count > limit
            if more { events.removeLast() }
            if events.isEmpty && before == 0 {
                // Known now but not yet as of then: an empty story. Never known: none at all.
                guard asOf != nil, try await store.hasEvents(.order(orderId), on: connection) else { return nil }
            }
            try fold.add(events)
            return HistoryPage(
                orderId: orderId, asOf: asOf, entries: fold.entries, order: fold.order,
                next: more ? fold.entries.last?.event.version : nil, streamVersion: streamVersion)
        }
    }
}

extension Ledger {
    /// The order's stream version now (nil: never seen), in one small statement that also confirms a cached token:
    /// whether a history page rendered at some version is still the answer.
    public func streamVersion(_ orderId: String) async throws -> Int? {
        try await store.streamVersion(.order(orderId))
    }
}
