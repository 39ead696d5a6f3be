import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// Every stream of one kind folded from the event log with the same pure fold the live path uses (its
/// `StreamDomain`'s `evolve`; for orders `OrderDecider.evolve`), one stream at a time: the kind's events are read in
/// (stream id, version) pages, so memory holds one page and one stream. Only the columns the fold needs are read (no
/// metadata, ids or positions): rebuild and verify read the whole log.
struct StreamFolds<Domain: StreamDomain>: Sendable {
    typealias State = Domain.State

    /// A stored event the domain cannot read (only a tampered row can be one).
    struct UnreadableEvent: Sendable {
        let stream: StreamName
        let version: Int
        let type: String
        let error: any Error
    }

    let client: SessionPool
    let logger: Logger
    /// What to do with an unreadable event: rethrow to stop, or note it and return to fold the stream without it.
    var unreadable: @Sendable (UnreadableEvent) throws -> Void = { throw $0.error }

    static var kind: String { Domain.kind.name }
    static var columns: String { "stream_id, version, type, data::text, recorded_at" }

    /// Calls `body` with batches of folded streams, in stream id order, and the number of events they folded.
    func forEachBatch(
        pageSize: Int = 10_000, _ body: (_ states: [State], _ events: Int) async throws -> Void
    ) async throws {
        var pages = Pages(folds: self, pageSize: pageSize)
        while let (batch, rest) = try await pages.next() {
            try await body(batch.states, batch.events)
            pages = rest
        }
    }

    /// How many events the kind's streams hold, and stream ids that cut them into `parts` ranges of about as many
    /// streams (fewer when there are few). Both come from `streams`, one row per stream, whose version is its number
    /// of events (versions have no gaps): over 1,000,000 events this took 29 ms, and counting `events` plus
    /// `ntile` over the orders 165 ms, all before the first event is folded.
    func plan(parts: Int) async throws -> (events: Int, boundaries: [String]) {
        var streams = 0, events = 0
        for try await (count, sum) in try await client.query(
            "SELECT count(*), COALESCE(sum(version), 0)::int8 FROM streams WHERE kind = \(Self.kind)", .reads, logger: logger
        ).decode((Int, Int).self) {
            (streams, events) = (count, sum)
        }
        let offsets = (1..<max(1, parts)).map { streams * $0 / parts }.filter { $0 > 0 && $0 < streams }
        guard !offsets.isEmpty else { return (events, []) }
        var boundaries: [String] = []
        for try await streamId in try await client.query(
            """
            SELECT (SELECT stream_id FROM streams WHERE kind = \(Self.kind) ORDER BY stream_id OFFSET n LIMIT 1)
            FROM unnest(\(offsets)::int8[]) AS n ORDER BY n
            """, .reads, logger: logger
        ).decode(String?.self) {
            if let streamId, streamId != boundaries.last { boundaries.append(streamId) }
        }
        return (events, boundaries)
    }

    /// The folds of the streams in `[from, below)` (or to the end), a page at a time. A value: `next()` answers the
    /// page and the pages after it, so two ranges can be folded at once by two tasks.
    struct Pages: Sendable {
        /// A page's whole streams and the events folded for them, and the pages after it.
        typealias Step = (batch: (states: [State], events: Int), rest: Pages)

        let folds: StreamFolds
        let pageSize: Int
        var below: String?
        private var cursor: (streamId: String, version: Int)
        private var folding = Folding()
        private var finished = false

        init(folds: StreamFolds, pageSize: Int, from: String = "", below: String? = nil) {
            self.folds = folds
            self.pageSize = pageSize
            self.below = below
            // (from, 0) sorts before every event of stream `from` (versions start at 1) and after every lower one.
            self.cursor = (from, 0)
        }

        /// The next batch of whole streams and the events folded for it, or nil after the last.
        func next() async throws -> Step? {
            guard !finished else { return nil }
            var rest = self
            // The row comparison covers the index's columns from the first (`events_stream_version`), so the page
            // starts at the cursor in the index.
            let kind = StreamFolds.kind
            let rows = try await folds.client.query(
                below.map { below in
                    """
                    SELECT \(unescaped: StreamFolds.columns) FROM events
                    WHERE (kind, stream_id, version) > (\(kind), \(cursor.streamId), \(cursor.version))
                      AND kind = \(kind) AND stream_id < \(below)
                    ORDER BY kind, stream_id, version LIMIT \(pageSize)
                    """
                } ?? """
                    SELECT \(unescaped: StreamFolds.columns) FROM events
                    WHERE (kind, stream_id, version) > (\(kind), \(cursor.streamId), \(cursor.version)) AND kind = \(kind)
                    ORDER BY kind, stream_id, version LIMIT \(pageSize)
                    """, .reads, logger: folds.logger)
            var states: [State] = []
            var count = 0
            for try await row in rows {
                rest.cursor = try rest.folding.add(row, unreadable: folds.unreadable, finished: &states)
                count += 1
            }
            if count < pageSize {
                if let state = rest.folding.finish() { states.append(state) }
                rest.finished = true
            }
            return ((states, count), rest)
        }
    }

    /// The folds of just these streams (for the catch-up at the end of a rebuild), read through `connection`.
    func fold(_ streamIds: [String], on connection: PostgresConnection) async throws -> [State] {
        let rows = try await connection.statement(
            """
            SELECT \(unescaped: Self.columns) FROM events
            WHERE kind = \(Self.kind) AND stream_id = ANY(\(streamIds)) ORDER BY stream_id, version
            """, logger: logger)
        var states: [State] = []
        var folding = Folding()
        for try await row in rows { _ = try folding.add(row, unreadable: unreadable, finished: &states) }
        if let state = folding.finish() { states.append(state) }
        return states
    }

    /// Folds events that arrive grouped by stream, in version order; hands back each stream's state once its last
    /// event is in.
    fileprivate struct Folding: Sendable {
        var currentId: String?
        var current: State?

        /// Folds the event in `row` (`StreamFolds.columns`); appends the previous stream's state to `finished` when
        /// the row starts the next stream. Returns the row's stream id and version.
        mutating func add(
            _ row: PostgresRow, unreadable: (UnreadableEvent) throws -> Void, finished: inout [State]
        ) throws -> (streamId: String, version: Int) {
            // Cell by cell: PostgresRow's variadic `decode` is not specialised in this module and looked up the
            // tuple's generic metadata for every row (13 % of a rebuild's CPU); a cell's `decode` is inlinable.
            let columns = row.makeRandomAccess()
            let streamId = try columns[0].decode(String.self), version = try columns[1].decode(Int.self)
            let type = try columns[2].decode(String.self), data = try columns[3].decode(ByteBuffer.self)
            let recordedAt = try columns[4].decode(Date.self)
            // The state is moved in and out of `current` (`take()`), not copied: a copy retained and released every
            // field of an order for every event.
            if currentId != streamId {
                if let state = current.take() { finished.append(state) }
                currentId = streamId
            }
            do {
                let event = try Domain.storedEvent(type: type, dataText: Array(data.readableBytesView))
                current = Domain.evolve(current.take(), event, stream: streamId, version: version, recordedAt: recordedAt)
            } catch {
                try unreadable(UnreadableEvent(
                    stream: StreamName(Domain.kind, streamId), version: version, type: type, error: error))
            }
            return (streamId, version)
        }

        mutating func finish() -> State? { current.take() }
    }
}

/// The orders' folds.
typealias OrderFolds = StreamFolds<OrderStream>
