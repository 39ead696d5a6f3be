import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Logging
import PostgresNIO
import Testing

/// The feed read on a physical streaming standby (issue 16): the horizon logic (`EventStore.readAll`) holds there
/// too, because a standby's snapshot is built from the primary's running transactions as replayed from WAL. The tests
/// make their own primary and a `pg_basebackup -R` standby of it (`StreamingStandby`).
@Suite("Replicas: the feed on a streaming standby")
struct StandbyFeedTests {
    static func withPrimaryAndStandby(
        _ body: @Sendable @escaping (_ onPrimary: SessionPool, _ onStandby: SessionPool) async throws -> Void
    ) async throws {
        try await StreamingStandby.withPrimaryAndStandby { onPrimary, onStandby, _ in try await body(onPrimary, onStandby) }
    }

    static func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
        if try await !StreamingStandby.eventually(condition) { Issue.record("never held: \(what)") }
    }

    static let metadata = EventMetadata(actor: "writer")

    @Test func anOpenTransactionOnThePrimaryHoldsTheStandbysFeedBack() async throws {
        try await Self.withPrimaryAndStandby { onPrimary, onStandby in
            let ledger = Ledger(client: onPrimary)
            let feed = EventStore(client: onStandby)
            _ = try await ledger.record(orderId: "first", events: [Lifecycle().created], metadata: Self.metadata)
            try await Self.waitUntil("the standby replayed the first event") { try await feed.count("events") == 1 }
            #expect(try await feed.readAll(after: nil, limit: 10).map(\.stream.id) == ["first"])

            let logger = Logger(label: "test")
            try await onPrimary.withConnection { open in
                // A transaction takes its id, then a later one commits an event while the first is still open.
                try await open.query("BEGIN", logger: logger)
                try await open.query("SELECT pg_current_xact_id()", logger: logger)
                _ = try await ledger.record(orderId: "later", events: [Lifecycle().created], metadata: Self.metadata)
                try await Self.waitUntil("the standby replayed the later event") { try await feed.count("events") == 2 }
                #expect(try await feed.readAll(after: nil, limit: 10).map(\.stream.id) == ["first"],
                        "the standby's feed holds back what an open transaction of the primary might still precede")
                try await open.query("COMMIT", logger: logger)
            }
            try await Self.waitUntil("the standby's horizon passed the ended transaction") {
                try await feed.readAll(after: nil, limit: 10).count == 2
            }
            #expect(try await feed.readAll(after: nil, limit: 10).map(\.stream.id) == ["first", "later"])
        }
    }

    @Test func theFeedReadOnAStandbyWhileWritersRaceIsThePrimarysFeed() async throws {
        try await Self.withPrimaryAndStandby { onPrimary, onStandby in
            let ledger = Ledger(client: onPrimary)
            let writers = 16, ordersPerWriter = 2
            let total = writers * ordersPerWriter * 6
            // Writers on the primary, each walking its orders through the lifecycle one event per transaction,
            // while one reader pages through the standby's feed as a consumer would.
            async let written: Void = withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for order in 0..<ordersPerWriter {
                            for event in Lifecycle().happyPath {
                                _ = try await ledger.record(orderId: "feed-\(writer)-\(order)", events: [event], metadata: Self.metadata)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let feed = EventStore(client: onStandby)
            var read: [Int64] = []
            var standbyHeldEverything = false
            let deadline = ContinuousClock.now + .seconds(180)
            while read.count < total, ContinuousClock.now < deadline {
                let page = try await feed.readAll(after: read.last, limit: 25)
                read += page.map(\.position)
                guard page.isEmpty else { continue }
                // An empty page read after the standby was seen to hold every event: nothing more for this cursor.
                if standbyHeldEverything { break }
                standbyHeldEverything = try await feed.count("events") == total
                // Else nothing new has been replayed below the horizon yet: poll again, as consumers do.
                if !standbyHeldEverything { try await Task.sleep(for: .milliseconds(5)) }
            }
            try await written

            var onPrimaryFeed: [Int64] = []
            while true {
                let page = try await EventStore(client: onPrimary).readAll(after: onPrimaryFeed.last, limit: 500)
                if page.isEmpty { break }
                onPrimaryFeed += page.map(\.position)
            }
            #expect(onPrimaryFeed.count == total)
            #expect(read == onPrimaryFeed, "the standby's feed is the primary's: nothing skipped, nothing reordered")
        }
    }
}
