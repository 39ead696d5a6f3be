import Foundation
import LedgerPostgres
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
