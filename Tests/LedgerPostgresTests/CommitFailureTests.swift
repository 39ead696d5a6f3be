import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// Nothing is acknowledged that PostgreSQL did not commit. A statement outside a transaction block is committed at
/// the `Sync` after it, after its `CommandComplete` (where PostgresNIO completes it): a commit that fails there —
/// a WAL write on a full disk, a crash, a deferred check — must reach the caller as an error (503, retry with the same
/// ids), never as success. Here every table gets a constraint trigger deferred to the commit that raises, so each
/// kind of write the ledger makes runs, completes its statement and fails at its commit.
@Suite("Store: a write whose commit fails is an error and leaves nothing")
struct CommitFailureTests {
    let actor = EventMetadata(actor: "test-suite")

    /// Every commit that wrote to a table of the ledger fails from now, until `commitsSucceed`.
    private func commitsFail(_ client: SessionPool) async throws {
        try await client.query("""
            CREATE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'the commit fails (test)'; END $$
            """)
        try await client.query("""
            DO $$ DECLARE t text; BEGIN
            FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' LOOP
                EXECUTE format('CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT OR UPDATE OR DELETE ON %I
                    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_at_commit()', t);
            END LOOP; END $$
            """)
    }

    private func commitsSucceed(_ client: SessionPool) async throws {
        try await client.query("DROP FUNCTION fail_at_commit() CASCADE")
    }

    /// `write` fails as the API answers an unreachable database (503, retry), not as success or a fault of ours.
    private func expectUnconfirmed<T>(_ what: String, _ write: () async throws -> T) async {
        do {
            _ = try await write()
            Issue.record("\(what): acknowledged, but its commit failed")
        } catch {
            #expect(DatabaseErrors.isUnavailable(error), "\(what): \(error)")
        }
    }

    @Test func everyKindOfAppendIsAnErrorAndNothingIsStored() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            let store = EventStore(client: client)
            let remembering = database.ledger
            let lifecycle = Lifecycle()
            _ = try await remembering.record(orderId: "order-1", events: [lifecycle.created], metadata: actor)
            let events = try await store.count("events")

            try await commitsFail(client)
            // From memory (this node wrote the order last): the grouped write, then the read that follows its failure.
            await expectUnconfirmed("an append from memory") {
                try await remembering.record(orderId: "order-1", events: [lifecycle.queued], metadata: actor)
            }
            // A node that remembers nothing reads, then writes: one event, then a batch.
            let reading = Ledger(client: client)
            await expectUnconfirmed("a single append") {
                try await reading.record(orderId: "order-1", events: [lifecycle.queued], metadata: actor)
            }
            await expectUnconfirmed("a batch") {
                try await reading.record(orderId: "order-1", events: [lifecycle.queued, lifecycle.receipt], metadata: actor)
            }
            // A batch that creates its order is written without a read.
            await expectUnconfirmed("a new order") {
                try await remembering.record(orderId: "order-2", events: [Lifecycle().created], metadata: actor)
            }
            // A provider's verified message: the fact and its follow-ups.
            let paid = ProviderNotified(
                provider: .appStore, notificationId: UUID().uuidString, notificationType: "ONE_TIME_CHARGE",
                effect: .payment, signedAt: Date(), transactionId: lifecycle.transactionId, productId: lifecycle.productId,
                amount: lifecycle.amount, environment: .production, evidence: .object([:]))
            await expectUnconfirmed("a provider's message") {
                try await remembering.recordProviderMessage(ProviderMessage(
                    fact: paid, match: ProviderMatch(orderId: "order-1", transactionIds: [lifecycle.transactionId])))
            }
            try await commitsSucceed(client)

            #expect(try await store.count("events") == events)
            #expect(try await database.ledger.order("order-1")?.version == 1)
            #expect(try await database.ledger.order("order-2") == nil)
            // What the node remembered of the failed writes is forgotten: the next append lands after version 1.
            let queued = try await remembering.record(orderId: "order-1", events: [lifecycle.queued], metadata: actor)
            #expect(queued.append.events.map(\.version) == [2])
        }
    }

    @Test func tokenChangesDigestsAndTheRecoveryScheduleAreErrorsAndChangeNothing() async throws {
        try await TestDatabase.withClient { client in
            let database = LedgerDatabase(client: client)
            let tokens = TokenStore(client: client)
            let secret = try await database.operations.createToken(name: "checkout", scopes: [.eventsWrite])
            let created = try await database.ledger.record(orderId: "order-1", events: [Lifecycle().created], metadata: actor)
            let order = created.order

            try await commitsFail(client)
            await expectUnconfirmed("a new token") {
                try await database.operations.createToken(name: "another", scopes: [.eventsRead])
            }
            await expectUnconfirmed("a rotation") {
                try await database.operations.rotateToken(name: "checkout", overlap: .zero)
            }
            await expectUnconfirmed("a revocation") { try await database.operations.revokeToken(name: "checkout") }
            // A digest: an error, or nothing sealed when an append still open holds the feed's horizon back, never a
            // checkpoint that was not stored.
            do {
                let sealed = try await database.operations.sealNow()
                #expect(sealed == nil, "a digest: acknowledged, but its commit failed")
            } catch {
                #expect(DatabaseErrors.isUnavailable(error), "a digest: \(error)")
            }
            await expectUnconfirmed("a recovery claim") {
                try await database.recovery.claim(order, now: Date(), plan: .standard)
            }
            try await commitsSucceed(client)

            #expect(try await database.operations.listTokens().map(\.name) == ["checkout"])
            #expect(try await tokens.authenticate(secret: secret)?.name == "checkout", "the old secret still works")
            #expect(try await database.operations.latestDigest() == nil)
            #expect(try await EventStore(client: client).count("recovery_schedule") == 0)
        }
    }
}
