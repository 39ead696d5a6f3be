import Foundation
@testable import LedgerPostgres
import PostgresNIO

/// A primary cluster of the test's own, with the ledger's schema in its `postgres` database, and a streaming standby
/// of it (`EmbeddedPostgres.startStandby`); clients to both as the superuser. Not the shared test cluster: a base
/// backup of it would copy every test's database.
public enum StreamingStandby {
    public static func withPrimaryAndStandby<T: Sendable>(
        _ body: @Sendable @escaping (_ primary: SessionPool, _ standby: SessionPool, _ standbyCluster: EmbeddedPostgres) async throws -> T
    ) async throws -> T {
        try await withClusters { primaryCluster, standbyCluster in
            try await Database(configuration: primaryCluster.configuration(database: "postgres")).withClient { onPrimary in
                try await Database(configuration: standbyCluster.configuration(database: "postgres")).withClient { onStandby in
                    try await body(onPrimary, onStandby, standbyCluster)
                }
            }
        }
    }

    /// The two clusters themselves, running, the schema migrated on the primary: for a test that stops or promotes
    /// them. Both are stopped and removed after `body`.
    public static func withClusters<T: Sendable>(
        _ body: @Sendable @escaping (_ primary: EmbeddedPostgres, _ standby: EmbeddedPostgres) async throws -> T
    ) async throws -> T {
        let base = URL(fileURLWithPath: "/tmp/olr-" + UUID().uuidString.prefix(8).lowercased())
        let primaryCluster = EmbeddedPostgres(dataDirectory: base.appendingPathComponent("p"))
        let standbyCluster = EmbeddedPostgres(dataDirectory: base.appendingPathComponent("s"))
        defer {
            try? standbyCluster.stop()
            try? primaryCluster.stop()
            try? FileManager.default.removeItem(at: base)
        }
        try primaryCluster.start()
        _ = try await Database(configuration: primaryCluster.configuration(database: "postgres")).withClient {
            try await Migrator(client: $0).migrate()
        }
        _ = try primaryCluster.startStandby(in: standbyCluster.dataDirectory)
        return try await body(primaryCluster, standbyCluster)
    }

    /// Polls `condition` for up to `limit` (a replica catching up, a monitor noticing); false if it never held. The
    /// limit is generous: it ends as soon as the condition holds, and under a full suite beside a build a standby's
    /// replay once took more than 30 s to catch up.
    public static func eventually(within limit: Duration = .seconds(120), _ condition: () async throws -> Bool) async throws -> Bool {
        try await LedgerTestSupport.eventually(within: limit, condition)
    }
}
