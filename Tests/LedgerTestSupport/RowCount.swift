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

extension EventStore {
    /// The highest position taken by a stored event (nil: none), whatever the feed's horizon.
    public func lastPosition() async throws -> Int64? {
        for try await position in try await client.query("SELECT max(position) FROM events").decode(Int64?.self) {
            return position
        }
        return nil
    }
}
