import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Logging
import PostgresNIO
import Testing

@Suite("Event store: the global feed never skips")
struct EventFeedTests {
    /// Pages the feed from `cursor` to its current end.
    static func drain(_ store: EventStore, from cursor: inout Int64?, pageSize: Int = 3) async throws -> [StoredEvent] {
        var seen: [StoredEvent] = []
        while true {
            let page = try await store.readAll(after: cursor, limit: pageSize)
            guard let last = page.last else { return seen }
            seen += page
            cursor = last.position
        }
    }

    /// Pages the feed until `count` events have come (or `within` passes). The feed reads below the oldest append
    /// still running, so an event may show up a moment after its commit, when an append before it ends.
    static func drain(
        _ store: EventStore, from cursor: inout Int64?, expecting count: Int, pageSize: Int = 3, within: Duration = .seconds(120)
    ) async throws -> [StoredEvent] {
        let deadline = ContinuousClock.now + within
        var seen = try await drain(store, from: &cursor, pageSize: pageSize)
        while seen.count < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            seen += try await drain(store, from: &cursor, pageSize: pageSize)
        }
        return seen
    }

    @Test func aTransactionThatTookALowerPositionAndCommitsLaterIsStillRead() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let logger = Logger(label: "test")
            let aHasAppended = AsyncStream.makeStream(of: Void.self)
            let mayCommit = AsyncStream.makeStream(of: Void.self)

            // A: takes a position inside an open transaction, then waits.
            let writerA = Task {
                // Whatever happens to A, the test stops waiting for it (a failed insert must fail the test, not hang it).
                defer { aHasAppended.continuation.finish() }
                try await client.withTransaction(logger: logger) { connection in
                    try await connection.query(
                        """
                        INSERT INTO events (kind, stream_id, version, event_id, type, data, recorded_at, canonical, hash)
                        VALUES ('order', 'order-a', 1, \(UUID()), 'a', '{}', now(), '\\x00', '\\x00')
                        """, logger: logger)
                    aHasAppended.continuation.yield()
                    for await _ in mayCommit.stream { break }
                }
            }
            for await _ in aHasAppended.stream { break }

            // B: a higher position, committed first.
            let b = try await store.append(to: "order-b", events: [StoreFixtures.event("b")])
            var cursor: Int64?
            let beforeA = try await Self.drain(store, from: &cursor)
            #expect(beforeA.isEmpty, "B must wait behind A's open transaction, or A would be skipped")

            mayCommit.continuation.yield()
            try await writerA.value
            let afterA = try await Self.drain(store, from: &cursor, expecting: 2)
            #expect(afterA.map(\.type) == ["a", "b"])
            #expect(afterA.first?.position ?? .max < b.events[0].position)
        }
    }

    /// Another open transaction — one that is not an append: an import, a session idle in transaction, another
    /// database's work — holds the feed back no longer: it used to, for as long as it stayed open.
    @Test func anOpenTransactionThatIsNotAnAppendDoesNotHoldTheFeedBack() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let logger = Logger(label: "test")
            let open = AsyncStream.makeStream(of: Void.self)
            let mayEnd = AsyncStream.makeStream(of: Void.self)
            let other = Task {
                defer { open.continuation.finish() }
                try await client.withTransaction(logger: logger) { connection in
                    // An id of its own, as any writing transaction has, and a write to a table that is not `events`.
                    try await connection.query("CREATE TEMPORARY TABLE imported (id int)", logger: logger)
                    try await connection.query("INSERT INTO imported VALUES (1)", logger: logger)
                    open.continuation.yield()
                    for await _ in mayEnd.stream { break }
                }
            }
            for await _ in open.stream { break }
            let appended = try await store.append(to: "order-1", events: [StoreFixtures.event("a")])
            var cursor: Int64?
            // While the other transaction stays open: a bound that tells "at once" from "when it ends" (never, here).
            // Two minutes: 20 s once ran out in a CI rehearsal with a build running beside the suite.
            let seen = try await Self.drain(store, from: &cursor, expecting: 1, within: .seconds(120))
            mayEnd.continuation.yield()
            try await other.value
            #expect(seen.map(\.position) == appended.events.map(\.position), "held back by a transaction that is not an append")
        }
    }

    @Test func aReaderPagingWhileManyWritersRaceSeesEveryEventExactlyOnce() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let writers = 12, appendsPerWriter = 20
            let finished = Flag()
            let writing = Task {
                defer { Task { await finished.set() } }
                return try await withThrowingTaskGroup(of: [UUID].self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            var ids: [UUID] = []
                            for n in 0..<appendsPerWriter {
                                let batch = (0..<Int.random(in: 1...3)).map { _ in StoreFixtures.event("w\(writer)", n) }
                                // Half the writers share orders, so stream locks and feed order interleave.
                                _ = try await store.append(to: "order-\(writer % 6)-\(n % 4)", events: batch)
                                ids += batch.map(\.eventId)
                                try await Task.sleep(for: .milliseconds(Int.random(in: 0...3)))
                            }
                            return ids
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
            }
            var cursor: Int64?
            var seen: [StoredEvent] = []
            while await !finished.isSet {
                seen += try await Self.drain(store, from: &cursor, pageSize: 7)
                try await Task.sleep(for: .milliseconds(2))
            }
            let written = try await writing.value
            seen += try await Self.drain(store, from: &cursor, expecting: written.count - seen.count, pageSize: 7)

            #expect(seen.count == written.count)
            #expect(Set(seen.map(\.eventId)) == Set(written))
            #expect(Set(seen.map(\.eventId)).count == seen.count, "no event may be read twice")
        }
    }

    @Test func anUnknownCursorIsRefused() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            await #expect(throws: EventStoreError.unknownPosition(42)) {
                try await store.readAll(after: 42, limit: 10)
            }
        }
    }
}

/// Set once, read many times across tasks.
actor Flag {
    private(set) var isSet = false
    func set() { isSet = true }
}
