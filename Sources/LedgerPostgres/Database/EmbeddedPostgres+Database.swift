import Foundation
import PostgresNIO

extension EmbeddedPostgres {
    /// Creates the ledger's database inside the cluster on first use (`createdb` ships with the server).
    func createDatabaseIfMissing() throws {
        let result = try PostgresBinaries.locate().run(
            "createdb", ["-h", socketDirectory.path, "-U", Self.superuser, Self.databaseName], as: owner)
        if result.status != 0 && !result.output.contains("already exists") {
            throw EmbeddedPostgresError.commandFailed("createdb", result.output)
        }
    }

    /// How to connect to a database in the cluster: over its private socket, as the superuser.
    public func configuration(database: String = databaseName) -> PostgresClient.Configuration {
        PostgresClient.Configuration(unixSocketPath: socketPath, username: Self.superuser, password: nil, database: database)
    }
}
