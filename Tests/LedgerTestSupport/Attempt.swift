/// Runs an async throwing body and keeps its outcome, so concurrent tasks can report successes and failures alike.
public func attempt<T: Sendable>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}
