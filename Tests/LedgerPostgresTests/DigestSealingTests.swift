import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Logging
import PostgresNIO
import Testing

/// `serve` seals the ledger digest on every node. A three-node run under load once logged "sealing the ledger digest
/// failed": a node waited for the sealers' advisory lock while another node's seal was slowed by the load, its
/// session's `lock_timeout` ended the wait, and — the error arriving with rows nobody read — it sealed beside the
/// other without the lock. Waiting now fails when the wait does (`queryToEnd`), and the periodic sealer does not
/// wait: it leaves the round to the sealer at work.
@Suite("Audit: periodic sealing beside another sealer")
struct DigestSealingTests {
    static let logger = Logger(label: "test")

    @Test func aSealerFindingAnotherAtWorkSkipsItsRoundInsteadOfMeetingTheLockTimeout() async throws {
        // The service's sessions, with a short lock_timeout so that waiting for the turn is refused quickly.
        let limits = ServerLimits(statement: .seconds(30), lock: .milliseconds(200), idleInTransaction: .seconds(30))
        try await TestDatabase.withOwnerAndService(limits: limits) { owner, service in
            try await recordHappyOrders(1, on: Ledger(client: owner))
            let digests = LedgerDigests(client: service)
            try await owner.withConnection { otherSealer in
                try await otherSealer.queryToEnd("SELECT pg_advisory_lock(\(LedgerDigests.lockKey))", logger: Self.logger)
                #expect(try await digests.seal(whenAnotherIsSealing: .skip) == nil, "the round is left to the sealer at work")
                do {
                    try await digests.seal(whenAnotherIsSealing: .wait)
                    Issue.record("waiting for the turn should have met the lock timeout")
                } catch {
                    #expect(sqlState(of: error) == "55P03", "lock_not_available: \(String(reflecting: error))")
                }
                try await otherSealer.queryToEnd("SELECT pg_advisory_unlock(\(LedgerDigests.lockKey))", logger: Self.logger)
            }
            #expect(try await digests.latest() == nil, "nothing was sealed while the other held the turn")
            // With the turn free, a skipping sealer seals (an append still ending may hold the horizon back for a
            // moment, so a round may seal nothing yet; the next one does).
            var sealed: DigestCheckpoint?
            let deadline = ContinuousClock.now + .seconds(120)
            while sealed?.eventCount != 6, ContinuousClock.now < deadline {
                sealed = try await digests.seal(whenAnotherIsSealing: .skip)
                if sealed == nil { sealed = try await digests.latest() }
            }
            #expect(sealed?.eventCount == 6)
        }
    }

    /// The sealer takes one session, the one that holds its turn: in `serve` it shares the first pool with the
    /// requests of one event loop (`EventLoopPools`). On a pool of one session, a sealer that needed a second would
    /// wait for it forever, and the time limit fails the test. Ten minutes, not three: alone it takes seconds, but
    /// under the whole suite's start, when hundreds of tests begin at once, it took 171 s and once (in CI, beside a
    /// build) 245 s.
    @Test(.timeLimit(.minutes(10))) func aSealerSealsOnTheOneSessionOfItsPool() async throws {
        try await TestDatabase.withClient(poolSize: 1) { client in
            let ledger = Ledger(client: client)
            try await recordHappyOrders(1, on: ledger)
            let digests = LedgerDigests(client: client)
            // An append still ending may hold the sealing horizon back for a moment (a round then seals nothing, and
            // returns), so the first checkpoint is waited for, bounded.
            let deadline = ContinuousClock.now + .seconds(120)
            var sealed = try await digests.seal()
            while sealed == nil, ContinuousClock.now < deadline { sealed = try await digests.seal() }
            #expect(sealed != nil, "a checkpoint on a pool of one session")
            // From a checkpoint, the cursor's place in the feed is looked up too: on the same session.
            try await recordHappyOrders(1, prefix: "more", on: ledger)
            _ = try await digests.seal()
        }
    }
}
