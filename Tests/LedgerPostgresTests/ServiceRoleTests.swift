import Foundation
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// `ledger_service`, the role `serve` connects as, may do what the service does and nothing else. The HTTP suites
/// run their whole API through it; these tests name what it must be refused.
@Suite("Database: the least-privileged service role")
struct ServiceRoleTests {
    @Test(arguments: [
        "UPDATE events SET type = 'edited'",
        "DELETE FROM events",
        "TRUNCATE events",
        "ALTER TABLE events DISABLE TRIGGER events_append_only",
        "DROP TABLE events",
        "DELETE FROM orders",
        "DELETE FROM order_transactions",
        "DELETE FROM streams",
        "UPDATE refusals SET code = 'edited'",
        "DELETE FROM ledger_digests",
        "INSERT INTO api_tokens (name, secret_hash, scopes) VALUES ('intruder', '\\x00', '{events:write}')",
        "UPDATE api_tokens SET revoked_at = NULL",
        "DELETE FROM schema_migrations",
        "CREATE TABLE intruder (id int)",
        "SELECT ledger_grant_service_privileges()",
        "SELECT ledger_service_login('guess')",
    ])
    func theServiceIsRefusedWhatIsNotItsJob(statement: String) async throws {
        try await TestDatabase.withOwnerAndService { owner, service in
            try await recordHappyOrders(1, on: Ledger(client: service))
            let before = try await rowCounts(owner)
            do {
                try await service.query(PostgresQuery(unsafeSQL: statement))
                Issue.record("ledger_service was allowed: \(statement)")
            } catch let error as PSQLError {
                // Refused by privileges, before the append-only trigger (the second wall) is ever reached.
                #expect(error.serverInfo?[.sqlState] == "42501", "\(statement)")
                #expect(error.serverInfo?[.message]?.contains("append-only") == false, "\(statement)")
            }
            #expect(try await rowCounts(owner) == before)
        }
    }

    @Test func theServiceRecordsReadsSealsAndLogsRefusals() async throws {
        try await TestDatabase.withOwnerAndService { _, service in
            let ledger = Ledger(client: service)
            let orderId = try #require(try await recordHappyOrders(2, on: ledger).first)
            #expect(try await ledger.order(orderId)?.state == .finished)
            var stranger = Lifecycle()
            stranger.transactionId = "tx-refused"
            let metadata = EventMetadata(actor: "test-suite", requestId: nil)
            for event in [stranger.created, stranger.queued, stranger.receipt, stranger.verified] {
                _ = try await ledger.record(orderId: "refused-1", events: [event], metadata: metadata)
            }
            await #expect(throws: Refusal.self) {
                try await ledger.record(orderId: "refused-1", events: [stranger.granted(to: "acct-other")], metadata: metadata)
            }
            #expect(try await ledger.store.count("refusals") == 1)
            #expect(try await sealUntil(16, service)?.eventCount == 16)
            #expect(try await ServiceRole.connectedRoleIsPrivileged(client: service, logger: .init(label: "test")) == false)
        }
    }

    @Test func theOwnerIsReportedAsPrivileged() async throws {
        try await TestDatabase.withClient { owner in
            let privileged = try await ServiceRole.connectedRoleIsPrivileged(client: owner, logger: .init(label: "test"))
            #expect(privileged)
        }
    }

    @Test func anUpToDateDatabaseNeedsNoMigrationRightsButAPendingOneSaysWhoMayApplyIt() async throws {
        try await TestDatabase.withOwnerAndService { _, service in
            #expect(try await Migrator(client: service).migrate().isEmpty)
            let next = Migration(name: "999_test.sql", sql: "CREATE TABLE test_added (id int);")
            do {
                try await Migrator(client: service, migrations: Migration.all + [next]).migrate()
                Issue.record("ledger_service applied a migration")
            } catch let error as MigrationError {
                #expect("\(error)".contains("999_test.sql"))
                #expect("\(error)".contains("ledger migrate"))
            }
        }
    }

    @Test func aRebuildGivesTheSwappedInProjectionsBackToTheService() async throws {
        try await TestDatabase.withOwnerAndService { owner, service in
            let ledger = Ledger(client: service)
            let orderId = try #require(try await recordHappyOrders(1, on: ledger).first)
            _ = try await ProjectionRebuild(client: owner).run()
            #expect(try await ledger.order(orderId)?.state == .finished)
            let next = try await recordHappyOrders(1, prefix: "after-rebuild", on: ledger)
            #expect(try await ledger.order(next[0])?.state == .finished)
            await #expect(throws: PSQLError.self) { try await service.query("DELETE FROM orders") }
        }
    }

    @Test func aLoginPasswordIsStoredAsGivenEvenWithQuotes() async throws {
        try await TestDatabase.withClient { owner in
            let password = "it's\"; DROP TABLE events; --"
            try await ServiceRole.allowLogin(password: password, client: owner, logger: .init(label: "test"))
            let rows = try await owner.query(
                "SELECT rolcanlogin, rolpassword IS NOT NULL FROM pg_authid WHERE rolname = \(ServiceRole.name)")
            for try await (canLogin, hasPassword) in rows.decode((Bool, Bool).self) {
                #expect(canLogin && hasPassword)
            }
            #expect(try await EventStore(client: owner).count("events") == 0)
            // Back to how the test cluster runs (the socket trusts local users; the password is not used there).
            try await owner.query("ALTER ROLE ledger_service PASSWORD NULL")
        }
    }

    private func rowCounts(_ client: PostgresClient) async throws -> [Int] {
        let store = EventStore(client: client)
        var counts: [Int] = []
        for table in ["events", "orders", "order_transactions", "streams", "refusals", "ledger_digests", "api_tokens"] {
            counts.append(try await store.count(table))
        }
        return counts
    }
}
