import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Synchronization
import Testing

/// A node appends without reading when it remembers the stream (its own last write) or the batch creates its order
/// (`RecentStreams`): one statement instead of two. What it remembers is never trusted — the write's guards stop a
/// stale or wrong decision, and the append reads instead — so these tests move a node's clock and write from two
/// nodes, and check what lands.
@Suite("Store: appends decided from memory")
struct AppendFromMemoryTests {
    let actor = EventMetadata(actor: "test-suite")

    /// The node's clock: the real one, moved by `shift` seconds, or stopped at `frozen`.
    final class MovableClock: Sendable {
        let shift = Mutex<TimeInterval>(0)
        let frozen = Mutex<Date?>(nil)
        func now() -> Date { frozen.withLock { $0 } ?? Date().addingTimeInterval(shift.withLock { $0 }) }
    }

    /// The database's clock now.
    private func databaseClock(_ client: SessionPool) async throws -> Date {
        for try await now in try await client.query("SELECT clock_timestamp()").decode(Date.self) { return now }
        throw CorruptRow(column: "clock_timestamp", value: "")
    }

    /// When the order's event at `version` was recorded.
    private func recordedAt(_ orderId: String, version: Int, _ client: SessionPool) async throws -> Date {
        let rows = try await client.query(
            "SELECT recorded_at FROM events WHERE kind = 'order' AND stream_id = \(orderId) AND version = \(version)")
        for try await recordedAt in rows.decode(Date.self) { return recordedAt }
        throw CorruptRow(column: "recorded_at", value: orderId)
    }

    /// A few readings of the database's clock, as reads would give: the estimate keeps the one with the shortest
    /// round trip, so a loaded machine's slow answer does not leave it far off.
    private func readTheClock(_ memory: RecentStreams, _ client: SessionPool) async throws {
        for _ in 0..<5 {
            let sentAt = memory.nodeClock()
            memory.observe(databaseClock: try await databaseClock(client), sentAt: sentAt)
        }
    }

    @Test func aNewOrderIsWrittenWithoutAReadAtTheDatabasesClockAsEstimated() async throws {
        try await TestDatabase.withClient { client in
            // A node whose clock stops 0.3 s slow once it has read the database's: its estimate of that clock is the
            // same at every call, so an event written from memory is recorded at exactly that time, where a read
            // would record the database's own. The write admits the estimate while it is within the tolerance
            // before the database's clock: written within 0.7 s of the stop. A loaded machine may take longer, and
            // then the append reads: it is tried until it is written from memory, each try a node of its own.
            var writtenFromMemory = false
            for attempt in 0..<50 where !writtenFromMemory {
                let clock = MovableClock()
                let memory = RecentStreams(now: clock.now)
                let ledger = Ledger(client: client, recentStreams: memory)
                try await readTheClock(memory, client)
                clock.frozen.withLock { $0 = Date().addingTimeInterval(-0.3) }
                let estimate = try #require(memory.databaseClock())
                _ = try await ledger.record(orderId: "order-\(attempt)", events: [Lifecycle().created], metadata: actor)
                let recorded = try await recordedAt("order-\(attempt)", version: 1, client)
                writtenFromMemory = abs(recorded.timeIntervalSince(estimate)) < 0.000_001
            }
            #expect(writtenFromMemory, "recorded at the node's estimate of the database's clock: decided from memory")
        }
    }

    @Test(arguments: [3_600.0, -5.0])
    func aClockEstimateAfterTheDatabasesOrTooFarBeforeItIsNotAdmitted(shift: TimeInterval) async throws {
        try await TestDatabase.withClient { client in
            let clock = MovableClock()
            let ledger = Ledger(client: client, recentStreams: RecentStreams(now: clock.now))
            let lifecycle = Lifecycle()
            _ = try await ledger.record(orderId: "order-1", events: [lifecycle.created], metadata: actor)
            clock.shift.withLock { $0 = shift }
            // The write refuses the remembered order's event at the estimate, and the append reads: the database's
            // clock. The read sets the estimate again, so the next new order is written from memory, near it.
            // Either way each event is recorded within the tolerance before the database's clock at its write,
            // and never after it.
            let before = try await databaseClock(client)
            let queued = try await ledger.record(orderId: "order-1", events: [lifecycle.queued], metadata: actor)
            _ = try await ledger.record(orderId: "order-2", events: [Lifecycle().created], metadata: actor)
            let after = try await databaseClock(client)
            #expect(queued.append.events.map(\.version) == [2])
            let tolerance = TimeInterval(RecentStreams.clockToleranceSeconds)
            for (orderId, version) in [("order-1", 2), ("order-2", 1)] {
                let recorded = try await recordedAt(orderId, version: version, client)
                #expect(recorded > before.addingTimeInterval(-tolerance) && recorded <= after,
                        "\(orderId) recorded at \(recorded), between \(before) and \(after)")
            }
            #expect(try await ledger.store.count("events") == 3)
            #expect(try await LedgerDatabase(client: client).operations.verify().passed)
        }
    }

    @Test func anotherNodesWriteSendsTheRememberedDecisionBackToARead() async throws {
        try await TestDatabase.withClient { client in
            let (nodeA, nodeB) = (Ledger(client: client), Ledger(client: client))
            let lifecycle = Lifecycle()
            _ = try await nodeA.record(orderId: "order-1", events: [lifecycle.created, lifecycle.queued], metadata: actor)
            // Node B moves the order on; node A still remembers it queued, where a verification would be refused.
            _ = try await nodeB.record(orderId: "order-1", events: [lifecycle.receipt], metadata: actor)
            let verified = try await nodeA.record(orderId: "order-1", events: [lifecycle.verified], metadata: actor)
            #expect(verified.append.events.map(\.version) == [4])
            #expect(verified.order.state == .verified)
            // Node B remembers version 3: its grant is decided again from a read, and chains onto node A's event.
            let granted = try await nodeB.record(orderId: "order-1", events: [lifecycle.granted()], metadata: actor)
            #expect(granted.append.events.map(\.version) == [5])
            #expect(try await nodeA.order("order-1") == granted.order)
            #expect(try await nodeA.store.count("refusals") == 0)
            let report = try await LedgerDatabase(client: client).operations.verify()
            #expect(report.passed, "\(report.brokenEvents.prefix(3))")
        }
    }

    /// Three nodes write one order at once, each remembering the stream as its own last write left it, which the
    /// others keep making stale: every append must land once, gapless, on one chain that `ledger verify` passes.
    @Test func threeNodesWritingOneOrderAtOnceKeepOneChain() async throws {
        try await TestDatabase.withClient { client in
            let nodes = [Ledger(client: client), Ledger(client: client), Ledger(client: client)]
            let lifecycle = Lifecycle()
            _ = try await nodes[0].record(orderId: "order-1", events: [lifecycle.created], metadata: actor)
            for node in nodes {  // each node remembers the order from a write of its own
                _ = try await node.record(orderId: "order-1", events: [lifecycle.receipt], metadata: actor)
            }
            let writers = 36
            let failures = await withTaskGroup(of: (any Error)?.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        // A re-delivered receipt, or a receipt and a retryable failure: every interleaving is accepted.
                        let events = writer.isMultiple(of: 2)
                            ? [lifecycle.receipt] : [lifecycle.receipt, lifecycle.verificationFailed(retryable: true)]
                        let outcome = await attempt {
                            try await nodes[writer % nodes.count].record(
                                orderId: "order-1", events: events, metadata: EventMetadata(actor: "w\(writer)"))
                        }
                        if case .failure(let error) = outcome { return error }
                        return nil
                    }
                }
                return await group.reduce(into: [any Error]()) { if let error = $1 { $0.append(error) } }
            }
            #expect(failures.isEmpty, "\(failures.prefix(3))")
            let expected = 1 + nodes.count + writers / 2 + writers / 2 * 2
            #expect(try await nodes[0].store.read(.order("order-1")).map(\.version) == Array(1...expected), "gapless")
            let report = try await LedgerDatabase(client: client).operations.verify()
            #expect(report.passed, "\(report.brokenEvents.prefix(3))")
        }
    }

    /// Three nodes, each remembering its own order with no transaction yet, race to credit one transaction through
    /// all three orders at once: memory knows nothing of the other orders' claims, so only the write's guard on
    /// the binding and the reads it sends back to can keep the grant single.
    @Test func threeNodesRacingOneTransactionAcrossTheirOrdersGrantItOnce() async throws {
        try await TestDatabase.withClient { client in
            let nodes = [Ledger(client: client), Ledger(client: client), Ledger(client: client)]
            var lifecycles: [Lifecycle] = []
            for index in nodes.indices {
                var lifecycle = Lifecycle()
                lifecycle.transactionId = "tx-raced"
                lifecycle.accountId = "acct-\(index)"
                _ = try await nodes[index].record(orderId: "order-\(index)", events: [lifecycle.created], metadata: actor)
                lifecycles.append(lifecycle)
            }
            let outcomes = await withTaskGroup(of: Result<Recorded, any Error>.self) { group in
                for writer in 0..<24 {
                    let index = writer % nodes.count
                    let lifecycle = lifecycles[index]
                    group.addTask {
                        await attempt {
                            try await nodes[index].record(
                                orderId: "order-\(index)", events: [lifecycle.receipt, lifecycle.verified, lifecycle.granted()],
                                metadata: EventMetadata(actor: "w\(writer)"))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { (try? $0.get()) != nil }.count == 1, "one grant")
            for case .failure(let error) in outcomes {
                switch error as? Refusal {
                case .transactionBoundElsewhere?, .alreadyGranted?, .invalidTransition?: break
                default: Issue.record("unexpected outcome \(error)")
                }
            }
            var granted = 0
            for index in nodes.indices where try await nodes[0].order("order-\(index)")?.grantedAt != nil { granted += 1 }
            #expect(granted == 1)
            #expect(try await nodes[0].store.count("order_transactions") == 1)
            let report = try await LedgerDatabase(client: client).operations.verify()
            #expect(report.passed, "\(report.brokenEvents.prefix(3))")
        }
    }

    @Test func aTransactionAnotherOrderHoldsIsRefusedFromTheDatabaseNotFromMemory() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let lifecycle = Lifecycle()
            _ = try await ledger.record(orderId: "order-1", events: lifecycle.happyPath, metadata: actor)
            // Order 2 is remembered with no transaction: only the write's guard on the binding sees order 1's.
            var other = Lifecycle()
            other.transactionId = lifecycle.transactionId
            _ = try await ledger.record(orderId: "order-2", events: [other.created], metadata: actor)
            await #expect(throws: Refusal.transactionBoundElsewhere(transactionId: lifecycle.transactionId, orderId: "order-1")) {
                try await ledger.record(orderId: "order-2", events: [other.receipt], metadata: actor)
            }
            #expect(try await ledger.order("order-2")?.state == .created)
        }
    }
}
