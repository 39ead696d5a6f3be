import Foundation
@testable import LedgerPostgres
import LedgerSchema
import LedgerTestSupport
import PostgresNIO
import Testing

@Suite("Migrations")
struct MigratorTests {
    @Test func migratingAnUpToDateDatabaseAgainIsANoOp() async throws {
        try await TestDatabase.withClient { client in
            let migrator = Migrator(client: client)
            #expect(try await migrator.migrate().isEmpty)
            #expect(try await migrator.migrate().isEmpty)
            var names: [String] = []
            for try await name in try await client.query("SELECT name FROM schema_migrations ORDER BY name").decode(String.self) {
                names.append(name)
            }
            #expect(names == Migration.all.map(\.name))
        }
    }

    @Test func anAppliedMigrationThatWasEditedIsRefusedWithItsName() async throws {
        try await TestDatabase.withClient { client in
            var edited = Migration.all
            edited[0] = Migration(name: edited[0].name, sql: edited[0].sql + "\n-- an innocent-looking edit\n")
            do {
                try await Migrator(client: client, migrations: edited).migrate()
                Issue.record("an edited migration was applied")
            } catch let error as MigrationError {
                #expect("\(error)".contains(edited[0].name))
                #expect("\(error)".contains("changed after it was applied"))
            }
        }
    }

    @Test func aNewMigrationIsAppliedOnceInOrder() async throws {
        try await TestDatabase.withClient { client in
            let next = Migration(name: "999_test.sql", sql: "CREATE TABLE test_added (id int); CREATE INDEX ON test_added (id);")
            let migrator = Migrator(client: client, migrations: Migration.all + [next])
            let first = try await migrator.migrate()
            let second = try await migrator.migrate()
            #expect(first == ["999_test.sql"])
            #expect(second.isEmpty)
        }
    }

    /// A node of this build is connected, as `serve` connects (its pool's sessions name their schema): a migration
    /// newer than that schema is refused and nothing of it applied, unless the operator allows older nodes.
    @Test func aNewMigrationIsRefusedWhileANodeOfAnOlderSchemaIsConnected() async throws {
        let (database, name) = try await TestDatabase.fresh()
        do {
            try await database.withClient { owner in
                let node = Database(configuration: database.serviceConfiguration(limits: .service))
                try await node.withClient { node in
                    for try await _ in try await node.query("SELECT 1") {}
                    let next = Migration(name: "999_test.sql", sql: "CREATE TABLE test_added (id int)")
                    do {
                        try await Migrator(client: owner, migrations: Migration.all + [next]).migrate()
                        Issue.record("applied while an older node was connected")
                    } catch let error as MigrationError {
                        #expect("\(error)".contains("999_test.sql"), "\(error)")
                        #expect("\(error)".contains(try #require(Migration.all.last).name), "names the node's schema: \(error)")
                    }
                    #expect(try await Self.tableExists("test_added", owner) == false, "nothing of it applied")
                    // The nodes of the newest schema do not hold anything back.
                    #expect(try await Migrator(client: owner).migrate().isEmpty)
                    let allowed = Migrator(client: owner, migrations: Migration.all + [next], allowOlderNodes: true)
                    #expect(try await allowed.migrate() == ["999_test.sql"])
                    #expect(try await Self.tableExists("test_added", owner))
                }
            }
            try await TestDatabase.drop(name)
        } catch {
            try? await TestDatabase.drop(name)
            throw error
        }
    }

    static func tableExists(_ table: String, _ client: SessionPool) async throws -> Bool {
        for try await exists in try await client.query("SELECT to_regclass(\(table)) IS NOT NULL").decode(Bool.self) {
            return exists
        }
        return false
    }

    /// Every SQL file in schema/ is embedded (Package.swift) and listed (Schema.swift), in order.
    @Test func everySchemaFileIsCarriedByTheBinary() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let files = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("schema").path)
            .filter { $0.hasSuffix(".sql") }.sorted()
        #expect(LedgerSchema.files.map(\.name) == files)
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for file in files {
            #expect(manifest.contains(".embedInCode(\"\(file)\")"), "Package.swift does not embed \(file)")
            let onDisk = try String(contentsOf: root.appendingPathComponent("schema/\(file)"), encoding: .utf8)
            #expect(LedgerSchema.files.first { $0.name == file }?.sql == onDisk)
        }
    }
}

/// Run as root, the quick start's `swift run ledger serve` stopped and asked for LEDGER_DATA_DIR: PostgreSQL runs as
/// `postgres`, which cannot reach `./.ledger` under a private directory such as /root.
@Suite("Embedded database: where it lives")
struct DataDirectoryTests {
    @Test func asRootUnderAPrivateDirectoryTheDefaultIsOnePostgresCanReachAndStaysTheSame() throws {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("private-\(UUID().uuidString)")
        let project = parent.appendingPathComponent("my project")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: parent) }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: parent.path)

        let first = EmbeddedPostgres.defaultDataDirectory(environment: [:], workingDirectory: project.path, asRoot: true)
        #expect(first.path.hasPrefix("/var/tmp/orderledger/myproject-"), "\(first.path)")
        #expect(EmbeddedPostgres.defaultDataDirectory(environment: [:], workingDirectory: project.path, asRoot: true) == first,
                "the next start finds the same directory")
        let other = parent.appendingPathComponent("other")
        #expect(EmbeddedPostgres.defaultDataDirectory(environment: [:], workingDirectory: other.path, asRoot: true) != first)
        // Not root, or a directory others can reach: ./.ledger as before; LEDGER_DATA_DIR always wins.
        #expect(EmbeddedPostgres.defaultDataDirectory(environment: [:], workingDirectory: project.path, asRoot: false)
            == project.appendingPathComponent(".ledger"))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: parent.path)
        #expect(EmbeddedPostgres.defaultDataDirectory(environment: [:], workingDirectory: project.path, asRoot: true)
            == project.appendingPathComponent(".ledger"))
        #expect(EmbeddedPostgres.defaultDataDirectory(environment: ["LEDGER_DATA_DIR": "/srv/ledger"], workingDirectory: project.path,
                                                      asRoot: true).path == "/srv/ledger")
    }
}
