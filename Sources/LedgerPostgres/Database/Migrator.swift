import Crypto
import Foundation
import LedgerCore
import LedgerSchema
import Logging
import PostgresNIO

/// Applies the numbered SQL files of `schema/` (embedded in the binary) in order, each in its own transaction,
/// and records each one's name and checksum. Refuses to go on when a file that was already applied has changed:
/// the database would no longer be what `schema/` says.
struct Migrator: Sendable {
    let client: SessionPool
    let logger: Logger
    let migrations: [Migration]
    /// Applies new migrations even while `serve` nodes of an older schema are connected (`NodeSchema`): for a
    /// migration the operator knows those nodes can run beside, such as a new index.
    let allowOlderNodes: Bool

    init(
        client: SessionPool, migrations: [Migration] = Migration.all, allowOlderNodes: Bool = false,
        logger: Logger = Logger(label: "ledger.migrate")
    ) {
        self.client = client
        self.migrations = migrations
        self.allowOlderNodes = allowOlderNodes
        self.logger = logger
    }

    /// Applies what is pending; returns the names applied (empty: the database was up to date).
    ///
    /// An up-to-date database is only read (no lock, no DDL), so a role without DDL rights — the service's
    /// `ledger_service` — passes here; when something is pending and the role may not apply it, the error says who may.
    @discardableResult
    func migrate() async throws -> [String] {
        try await client.withConnection { connection in
            if try await pending(on: connection).isEmpty { return [] }
            // One migrator at a time, across processes (two `serve`s starting together, parallel test suites).
            try await connection.queryToEnd("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
            do {
                let applied = try await apply(on: connection)
                try await connection.queryToEnd("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.statement("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                if sqlState(of: error) == SQLStates.insufficientPrivilege {
                    let refusal = (error as? PSQLError)?.serverInfo?[.message] ?? "permission denied"
                    throw MigrationError.notPermitted(pending: try await pending(on: connection).map(\.name), refusal)
                }
                throw error
            }
        }
    }

    /// An arbitrary constant naming the migration lock.
    static let lockKey: Int64 = 0x4C45_4447_4552

    /// The migrations not applied yet, in order; refuses when an applied one has changed since.
    private func pending(on connection: PostgresConnection) async throws -> [Migration] {
        var recorded: [String: String] = [:]
        var tableExists = false
        for try await exists in try await connection.statement(
            "SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger
        ).decode(Bool.self) {
            tableExists = exists
        }
        guard tableExists else { return migrations }
        for try await (name, checksum) in try await connection.statement(
            "SELECT name, checksum FROM schema_migrations", logger: logger
        ).decode((String, String).self) {
            recorded[name] = checksum
        }
        return try migrations.filter { migration in
            guard let checksum = recorded[migration.name] else { return true }
            guard checksum == migration.checksum else { throw MigrationError.changedAfterApply(migration.name) }
            return false
        }
    }

    private func apply(on connection: PostgresConnection) async throws -> [String] {
        try await connection.statement(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                name       text PRIMARY KEY,
                checksum   text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
        var applied: [String] = []
        // Read again under the lock: another migrator may have applied some meanwhile.
        let pending = try await pending(on: connection)
        if !allowOlderNodes, let newest = pending.last?.name {
            let older = try await NodeSchema.olderNodes(than: newest, on: connection, logger: logger)
            if !older.isEmpty { throw MigrationError.olderNodesConnected(pending: pending.map(\.name), nodes: older) }
        }
        for migration in pending {
            try await connection.transaction(logger: logger) { connection in
                for statement in SQLScript.statements(migration.sql) {
                    // Read to the end: a `SELECT some_function()` in a script fails in its rows.
                    try await connection.queryToEnd(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.statement(
                    "INSERT INTO schema_migrations (name, checksum) VALUES (\(migration.name), \(migration.checksum))",
                    logger: logger)
            }
            logger.info("applied migration", metadata: ["name": "\(migration.name)"])
            applied.append(migration.name)
        }
        return applied
    }
}

/// One numbered SQL file of `schema/`.
struct Migration: Sendable, Hashable {
    let name: String
    let sql: String

    init(name: String, sql: String) {
        self.name = name
        self.sql = sql
    }

    /// SHA-256 of the file's bytes, hex.
    var checksum: String {
        Array(SHA256.hash(data: Data(sql.utf8))).hex
    }

    /// Every migration the binary carries, in order.
    static var all: [Migration] {
        LedgerSchema.files.map { Migration(name: $0.name, sql: $0.sql) }
    }
}

public enum MigrationError: Error, CustomStringConvertible {
    case changedAfterApply(String)
    /// Migrations are pending and the connected role may not apply them (the service's role never may).
    case notPermitted(pending: [String], String)
    /// Migrations are pending and `serve` nodes built for an older schema are connected (`NodeSchema`).
    case olderNodesConnected(pending: [String], nodes: [String])

    public var description: String {
        switch self {
        case .changedAfterApply(let name):
            "migration \(name) was changed after it was applied to this database; "
                + "restore the original file and put the change in a new numbered migration."
        case .notPermitted(let pending, let cause):
            "migrations \(pending.joined(separator: ", ")) are pending and this database role may not apply them "
                + "(\(cause)): run `ledger migrate` as the database's owner first."
        case .olderNodesConnected(let pending, let nodes):
            "migrations \(pending.joined(separator: ", ")) are pending, but serve nodes built for an older schema "
                + "(\(nodes.joined(separator: ", "))) are connected to this database: stop or upgrade them first, or pass "
                + "--allow-older-nodes if they can run beside the new migrations."
        }
    }
}
