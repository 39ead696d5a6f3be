import LedgerPostgres

extension FeedConsumers {
    /// Rounds of `consumer` until it has handled `expected` events in all (or a minute passes), never handing it more:
    /// a round ends at an empty page, and on a cluster busy with other tests' transactions a page can come back short
    /// or empty while events wait (the feed's horizon). Returns the events its rounds handled.
    @discardableResult
    public func drain(_ consumer: FeedConsumer, node: String = "a", pageSize: Int = 100, expected: Int) async throws -> Int {
        let started = ContinuousClock.now
        var handled = 0
        while handled < expected, ContinuousClock.now - started < .seconds(60) {
            let size = min(pageSize, expected - handled)
            handled += try await run(consumer, node: node, pageSize: size, maximumPages: (expected - handled) / size) ?? 0
        }
        return handled
    }
}
