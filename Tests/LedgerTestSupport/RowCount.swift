@testable import LedgerPostgres
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
    /// The position of the last stored event in feed order (transaction, then position) — the event a digest that
    /// covers everything ends at — whatever the feed's horizon. Nil: no event.
    public func lastPositionInFeedOrder() async throws -> Int64? {
        for try await position in try await client.query(
            "SELECT position FROM events ORDER BY transaction_xid DESC, position DESC LIMIT 1"
        ).decode(Int64.self) {
            return position
        }
        return nil
    }
}
