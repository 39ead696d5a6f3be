/// Whether `condition` holds within `limit`, looked at every 10 ms: for a state the code under test reaches on its
/// own schedule (appends gathered in a group), where no event says it has.
public func eventually(within limit: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}
