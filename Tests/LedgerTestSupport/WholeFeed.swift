import LedgerCore
import LedgerPostgres

extension Ledger {
    /// The feed's first `count` events (or what it holds after two minutes): the feed reads below the cluster's oldest
    /// open transaction, and other tests share the cluster, so a read right after the appends may come back short
    /// (a busy suite once served 8 of 9, and once 11 of 12 to a test that then indexed the twelfth).
    public func feed(holding count: Int) async throws -> [StoredEvent] {
        let deadline = ContinuousClock.now + .seconds(120)
        var feed = try await feed(after: nil, limit: max(count, 100))
        while feed.count < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            feed = try await self.feed(after: nil, limit: max(count, 100))
        }
        return feed
    }
}
