import LedgerPostgres
import PostgresNIO

/// Counts rows, for tests that check a refused request wrote nothing.
extension EventStore {
    public func count(_ table: String) async throws -> Int {
        for try await count in try await client.query("SELECT count(*)::int8 FROM \(unescaped: table)").decode(Int.self) {
            return count
        }
        return 0
    }
}
