import Foundation

/// Runs blocking work (a socket read, a sleep that paces a slow client) on a thread of its own, never on the tests'
/// cooperative pool: that pool has a thread per core, two on a small machine, and a thread blocked there can starve
/// the very server the test is waiting for (an in-process server's handlers run on the same pool).
public func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}

/// `blocking` for work that cannot fail.
public func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: work()) }
    }
}
