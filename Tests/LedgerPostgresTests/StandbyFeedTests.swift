import Foundation
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import Logging
import PostgresNIO
import Testing

/// The feed read on a physical streaming standby (issue 16): the horizon logic (`EventStore.readAll`) holds there
/// too, because a standby's snapshot is built from the primary's running transactions as replayed from WAL. The tests
/// make their own primary and a `pg_basebackup -R` standby of it (not the shared test cluster, whose every database a
/// base backup would copy).
@Suite("Replicas: the feed on a streaming standby")
struct StandbyFeedTests {
    /// A fresh primary with the ledger's schema (in its `postgres` database: the cluster is the test's own) and a
    /// streaming standby of it; clients to both.
    static func withPrimaryAndStandby(
        _ body: @Sendable @escaping (_ onPrimary: PostgresClient, _ onStandby: PostgresClient) async throws -> Void
    ) async throws {
        let base = URL(fileURLWithPath: "/tmp/olr-" + UUID().uuidString.prefix(8).lowercased())
        let primary = EmbeddedPostgres(dataDirectory: base.appendingPathComponent("p"))
        defer {
            try? EmbeddedPostgres(dataDirectory: base.appendingPathComponent("s")).stop()
            try? primary.stop()
            try? FileManager.default.removeItem(at: base)
        }
        try primary.start()
        let primaryDatabase = Database(configuration: primary.configuration(database: "postgres"))
        try await primaryDatabase.withClient { try await Migrator(client: $0).migrate() }
        let standby = try primary.startStandby(in: base.appendingPathComponent("s"))
        try await primaryDatabase.withClient { onPrimary in
            try await Database(configuration: standby.configuration(database: "postgres")).withClient { onStandby in
                try await body(onPrimary, onStandby)
            }
        }
    }

    /// Polls `condition` (a replica is caught up when it is) for up to 30 s.
    static func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try await !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("never held: \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    static let metadata = EventMetadata(actor: "writer")

    @Test func anOpenTransactionOnThePrimaryHoldsTheStandbysFeedBack() async throws {
        try await Self.withPrimaryAndStandby { onPrimary, onStandby in
            let ledger = Ledger(client: onPrimary)
            let feed = EventStore(client: onStandby)
            _ = try await ledger.record(orderId: "first", events: [Lifecycle().created], metadata: Self.metadata)
            try await Self.waitUntil("the standby replayed the first event") { try await feed.count("events") == 1 }
            #expect(try await feed.readAll(after: nil, limit: 10).map(\.orderId) == ["first"])

            let logger = Logger(label: "test")
            try await onPrimary.withConnection { open in
                // A transaction takes its id, then a later one commits an event while the first is still open.
                try await open.query("BEGIN", logger: logger)
                try await open.query("SELECT pg_current_xact_id()", logger: logger)
                _ = try await ledger.record(orderId: "later", events: [Lifecycle().created], metadata: Self.metadata)
                try await Self.waitUntil("the standby replayed the later event") { try await feed.count("events") == 2 }
                #expect(try await feed.readAll(after: nil, limit: 10).map(\.orderId) == ["first"],
                        "the standby's feed holds back what an open transaction of the primary might still precede")
                try await open.query("COMMIT", logger: logger)
            }
            try await Self.waitUntil("the standby's horizon passed the ended transaction") {
                try await feed.readAll(after: nil, limit: 10).count == 2
            }
            #expect(try await feed.readAll(after: nil, limit: 10).map(\.orderId) == ["first", "later"])
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
            let deadline = ContinuousClock.now + .seconds(60)
            while read.count < total, ContinuousClock.now < deadline {
                let page = try await feed.readAll(after: read.last, limit: 25)
                read += page.map(\.position)
                guard page.isEmpty else { continue }
                // An empty page once the standby holds every event: the feed has nothing more for this cursor.
                if try await feed.count("events") == total { break }
                // Else nothing new has been replayed below the horizon yet: poll again, as consumers do.
                try await Task.sleep(for: .milliseconds(5))
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
