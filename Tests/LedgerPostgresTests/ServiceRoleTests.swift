import Crypto
import Foundation
import LedgerCore
@testable import LedgerPostgres
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

    /// Roles are the cluster's, not one database's: nodes starting together (or migrations of several databases)
    /// alter `ledger_service` at the same moment, and PostgreSQL refuses all but one of them. Every call succeeds.
    @Test func manyCallersLettingTheServiceRoleLogInAtOnceAllSucceed() async throws {
        try await TestDatabase.withClient { owner in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<16 {
                    group.addTask { try await ServiceRole.allowLogin(password: nil, client: owner, logger: .init(label: "test")) }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test func aLoginPasswordIsStoredAsGivenEvenWithQuotes() async throws {
        try await TestDatabase.withClient { owner in
            let password = "it's\"; DROP TABLE events; --"
            var roles: [(canLogin: Bool, secret: String?)] = []
            // The role is the cluster's: another test (`ServeCommandTests`, whose `ledger migrate` sets a password of
            // its own) may set it between this test's set and its read, so the pair is tried again when the stored
            // verifier is not of this password, a few times. One that never stores this text still fails.
            for _ in 0..<5 {
                try await ServiceRole.allowLogin(password: password, client: owner, logger: .init(label: "test"))
                roles = []
                let rows = try await owner.query(
                    "SELECT rolcanlogin, rolpassword FROM pg_authid WHERE rolname = \(ServiceRole.name)")
                for try await role in rows.decode((Bool, String?).self) { roles.append(role) }
                if roles.first?.secret.flatMap(StoredPassword.init)?.admits(password) == true { break }
            }
            // Back to how the test cluster runs (the socket trusts local users; the password is not used there). Retried
            // as allowLogin is: the role is the cluster's, and other tests alter it at the same moment.
            for attempt in 1... {
                do {
                    try await owner.queryToEnd("ALTER ROLE ledger_service PASSWORD NULL", logger: .init(label: "test"))
                    break
                } catch where attempt < 100 && ServiceRole.isConcurrentRoleUpdate(error) {}
            }

            #expect(roles.count == 1, "one ledger_service role")
            let role = try #require(roles.first)
            #expect(role.canLogin)
            // The stored secret is PostgreSQL's verifier of exactly the given text: not of a re-quoted or cut copy.
            let verifier = try #require(role.secret.flatMap(StoredPassword.init), "stored: \(role.secret ?? "nothing")")
            #expect(verifier.admits(password), "stored: \(role.secret ?? "")")
            #expect(!verifier.admits("it''s\"; DROP TABLE events; --"), "the check tells one text from another")
            #expect(try await EventStore(client: owner).count("events") == 0)
        }
    }

    private func rowCounts(_ client: SessionPool) async throws -> [Int] {
        let store = EventStore(client: client)
        var counts: [Int] = []
        for table in ["events", "orders", "order_transactions", "streams", "refusals", "ledger_digests", "api_tokens"] {
            counts.append(try await store.count(table))
        }
        return counts
    }
}

/// A role's stored password secret (`pg_authid.rolpassword`), checked the way PostgreSQL checks a login: a SCRAM-SHA-256
/// verifier (`SCRAM-SHA-256$iterations:salt$StoredKey:ServerKey`, RFC 5802/7677), or an MD5 one (`md5` + hex of
/// md5(password ‖ role name)). An ASCII password needs no SASLprep.
private struct StoredPassword {
    let secret: String

    init?(_ secret: String) {
        guard secret.hasPrefix("SCRAM-SHA-256$") || secret.hasPrefix("md5") else { return nil }
        self.secret = secret
    }

    func admits(_ password: String) -> Bool {
        if secret.hasPrefix("md5") {
            return secret == "md5" + Insecure.MD5.hash(data: Array((password + ServiceRole.name).utf8)).map {
                String(format: "%02x", $0)
            }.joined()
        }
        let parts = secret.dropFirst("SCRAM-SHA-256$".count).split(separator: "$")
        guard parts.count == 2 else { return false }
        let salting = parts[0].split(separator: ":"), keys = parts[1].split(separator: ":")
        guard salting.count == 2, keys.count == 2, let iterations = Int(salting[0]), iterations > 0,
              let salt = Data(base64Encoded: String(salting[1])), let storedKey = Data(base64Encoded: String(keys[0])),
              let serverKey = Data(base64Encoded: String(keys[1]))
        else { return false }
        let salted = Self.pbkdf2(password: Array(password.utf8), salt: Array(salt), iterations: iterations)
        let clientKey = Self.hmac(key: salted, Array("Client Key".utf8))
        return Array(SHA256.hash(data: clientKey)) == Array(storedKey)
            && Self.hmac(key: salted, Array("Server Key".utf8)) == Array(serverKey)
    }

    private static func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    /// PBKDF2-HMAC-SHA-256 (RFC 8018), one 32-byte block: what SCRAM's `Hi()` is.
    private static func pbkdf2(password: [UInt8], salt: [UInt8], iterations: Int) -> [UInt8] {
        var block = hmac(key: password, salt + [0, 0, 0, 1])
        var result = block
        for _ in 1..<iterations {
            block = hmac(key: password, block)
            for index in result.indices { result[index] ^= block[index] }
        }
        return result
    }
}
