import Foundation
@testable import LedgerPostgres
import PostgresNIO

extension TestDatabase {
    /// Like `withOwnerAndService`, with the service connected as `serve` connects it: with PostgreSQL's own limits
    /// on its sessions (`ServerLimits`). The owner's client has none.
    public static func withOwnerAndService<T: Sendable>(
        limits: ServerLimits, poolSize: Int = 4,
        _ body: @Sendable @escaping (_ owner: SessionPool, _ service: SessionPool) async throws -> T
    ) async throws -> T {
        try await withFresh(poolSize: poolSize) { database, _ in
            try await database.withClient { owner in
                try await Database(configuration: database.serviceConfiguration(limits: limits)).withClient { service in
                    try await body(owner, service)
                }
            }
        }
    }
}

/// The first text column of the first row of `query`, or nil when there is none.
public func firstText(_ query: PostgresQuery, on client: SessionPool) async throws -> String? {
    try await client.query(query, logger: .init(label: "test")) { rows in
        for try await value in rows.decode(String.self) { return value }
        return nil
    }
}
