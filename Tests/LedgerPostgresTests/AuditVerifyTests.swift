import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

@Suite("Audit: hash chains, digests and projection drift")
struct AuditVerifyTests {
    @Test func anUntouchedLedgerVerifies() async throws {
        try await TestDatabase.withClient { client in
            try await recordHappyOrders(3, on: Ledger(client: client))
            let checkpoint = try #require(try await sealUntil(18, client))
            #expect(checkpoint.eventCount == 18)
            let report = try await LedgerDatabase(client: client).operations.verify(pinned: PinnedDigest(checkpoint.pinned))
            #expect(report.passed)
            #expect(report.eventsChecked == 18)
            #expect(report.ordersChecked == 3)
            #expect(report.checkpointsChecked >= 1)
            #expect(report.digest?.outcome == .matched)
        }
    }

    @Test func editingOneEventsDataIsNamedByOrderAndVersion() async throws {
        try await TestDatabase.withClient { client in
            try await recordHappyOrders(3, on: Ledger(client: client))
            try await tamper(client, [
                "UPDATE events SET data = jsonb_set(data, '{accountId}', '\"acct-thief\"') WHERE stream_id = 'order-1' AND version = 1"
            ])
            let report = try await LedgerDatabase(client: client).operations.verify()
            #expect(!report.passed)
            #expect(report.brokenEvents.map { "\($0.stream.id)@\($0.version)" } == ["order-1@1"])
        }
    }

    @Test func anEditedProjectionRowIsReportedAsDrift() async throws {
        try await TestDatabase.withClient { client in
            try await recordHappyOrders(2, on: Ledger(client: client))
            try await client.query("UPDATE orders SET state = 'granted', amount_value = 1 WHERE order_id = 'order-0'")
            try await client.query("DELETE FROM order_transactions WHERE order_id = 'order-1'")
            let report = try await LedgerDatabase(client: client).operations.verify()
            #expect(!report.passed)
            #expect(report.brokenEvents.isEmpty)
            let drift = Set(report.drift.map { "\($0.table) \($0.key) \($0.field)" })
            #expect(drift == ["orders order-0 state", "orders order-0 amount", "order_transactions order-1 (row)"])
        }
    }

    /// The attacker rewrites an event and every hash after it in its order, so each chain holds again; only the
    /// digest an auditor saved before the edit exposes it.
    @Test func aSavedDigestFailsAfterAConsistentRewriteBelowItsPosition() async throws {
        try await TestDatabase.withClient { client in
            try await recordHappyOrders(2, on: Ledger(client: client))
            let saved = try #require(try await sealUntil(12, client))
            let pinned = try #require(PinnedDigest(saved.pinned))
            #expect(try await LedgerDatabase(client: client).operations.verify(pinned: pinned).digest?.outcome == .matched)

            try await rewriteConsistently(client, orderId: "order-0", version: 1) { data in
                var data = data
                if case .object(var members) = data { members["accountId"] = "acct-thief"; data = .object(members) }
                return data
            }
            let report = try await LedgerDatabase(client: client).operations.verify(pinned: pinned)
            #expect(report.brokenEvents.isEmpty, "the rewrite keeps every chain intact")
            guard case .mismatch? = report.digest?.outcome else {
                Issue.record("the saved digest must no longer match, got \(String(describing: report.digest?.outcome))")
                return
            }
            #expect(!report.checkpointMismatches.isEmpty, "the stored checkpoints contradict the events too")
            #expect(!report.passed)
        }
    }

    @Test func aDataOnlyEditBelowASavedDigestFailsTheDigestCheck() async throws {
        try await TestDatabase.withClient { client in
            try await recordHappyOrders(1, on: Ledger(client: client))
            let sealed = try #require(try await sealUntil(6, client))
            let pinned = try #require(PinnedDigest(sealed.pinned))
            try await tamper(client, ["UPDATE events SET data = '{}' WHERE stream_id = 'order-0' AND version = 6"])
            #expect(try await LedgerDatabase(client: client).operations.verify(pinned: pinned).digest?.outcome == .eventsAltered(count: 1))
        }
    }

    @Test func sealingStopsJustBeforeABrokenEventNamesItAndKeepsTheRestReadable() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            try await recordHappyOrders(2, on: ledger)
            try await tamper(client, ["UPDATE events SET type = 'order.cancelled' WHERE stream_id = 'order-0' AND version = 6"])
            let refusal = try #require(try await sealUntilRefused(client))
            #expect(refusal.stream == .order("order-0") && refusal.version == 6)
            #expect(refusal.description.contains("order order-0 version 6"))
            // Every event before the broken one is sealed, and stays the digest everyone reads.
            #expect(refusal.sealedUpTo?.eventCount == 5)
            #expect(try await LedgerDigests(client: client).latest() == refusal.sealedUpTo)
            #expect(try await ledger.history("order-1")?.entries.count == 6, "reads go on")
            #expect(try await ledger.order("order-0")?.state == .finished)
        }
    }

    @Test func verifyExplainsAChainThatMissedThePreviousHash() async throws {
        try await TestDatabase.withClient { client in
            try await recordHappyOrders(1, on: Ledger(client: client))
            // What the concurrent-append defect before schema/007 wrote: version 3 sealed onto no previous hash.
            try await tamper(client, ["UPDATE events SET hash = sha256(canonical) WHERE stream_id = 'order-0' AND version = 3"])
            let report = try await LedgerDatabase(client: client).operations.verify()
            #expect(report.brokenEvents.first?.version == 3, "version 4, chained onto the old hash, breaks too")
            #expect(report.brokenEvents.first?.problem.contains("chains onto no previous event") == true)
            #expect(!report.passed)
        }
    }

    @Test func sealingAgainAddsOnlyNewEventsAndChainsOnTheLastCheckpoint() async throws {
        try await TestDatabase.withClient { client in
            let ledger = Ledger(client: client)
            let digests = LedgerDigests(client: client)
            try await recordHappyOrders(1, prefix: "a", on: ledger)
            let first = try #require(try await sealUntil(6, client))
            #expect(first.eventCount == 6)
            #expect(try await digests.seal() == nil, "nothing new, no checkpoint")
            try await recordHappyOrders(1, prefix: "b", on: ledger)
            let second = try #require(try await sealUntil(12, client))
            #expect(second.eventCount == 12)
            #expect(try await digests.latest() == second)
            let report = try await LedgerDatabase(client: client).operations.verify(pinned: PinnedDigest(first.pinned))
            #expect(report.passed)
            #expect(report.checkpointsChecked >= 2)
        }
    }

    /// Replaces one event's data and re-seals it and every later event of its order, as a careful attacker would.
    func rewriteConsistently(
        _ client: SessionPool, orderId: String, version: Int, edit: (JSONValue) -> JSONValue
    ) async throws {
        var previous: [UInt8]?
        var statements: [PostgresQuery] = []
        try await AuditLog(client: client).forEach(of: .order(orderId)) { audited in
            var event = audited.event
            if event.version == version { event.data = edit(event.data) }
            guard event.version >= version else {
                previous = audited.hash
                return true
            }
            let canonical = EventSeal.canonicalBytes(
                stream: event.stream, version: event.version, eventId: event.eventId, type: event.type, data: event.data,
                metadata: event.metadata, occurredAt: event.occurredAt, recordedAt: event.recordedAt)
            let hash = EventSeal.hash(previous: previous, canonical: canonical)
            previous = hash
            statements.append(
                """
                UPDATE events SET data = \(event.data.canonicalJSON)::jsonb, canonical = \(ByteBuffer(bytes: canonical)),
                    hash = \(ByteBuffer(bytes: hash))
                WHERE stream_id = \(orderId) AND version = \(event.version)
                """)
            return true
        }
        try await tamper(client, statements)
    }

    /// Seals until sealing reaches the broken event and refuses it (or 120 s pass): sealing stops below the oldest
    /// transaction open anywhere in the cluster, and the other tests keep transactions open in their own databases.
    func sealUntilRefused(_ client: SessionPool) async throws -> SealRefused? {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            do {
                _ = try await LedgerDigests(client: client).sealNow()
            } catch let refusal as SealRefused {
                return refusal
            }
        }
        return nil
    }
}
