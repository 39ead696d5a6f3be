import Foundation
import LedgerCore
import NIOCore
import Synchronization

/// Reads of big pages (a history or feed page of more than 100 events) run `permits` at a time, the others waiting
/// their turn: a page of 1000 events costs the service and PostgreSQL milliseconds of CPU to read, fold and render,
/// and 16 clients reading such pages (each with a new `asOf`, so never from the rendered-page cache) took both cores:
/// single appends fell from 1,218/s to 54/s, p50 12 ms → 268 ms (release build, this machine). Bounding the pool's
/// read sessions alone (`SessionPool.lease`) kept sessions for writes, not the CPU to use them. Pages of the default
/// size and smaller never wait here.
///
/// A big page is also rendered off the event loops (`render`): `serve` runs its tasks on them, and a page's tens of
/// milliseconds of rendering held every connection of its loop that long (appends' p99 under 16 such readers: 80 ms).
final class BigPageReads: Sendable {
    /// A page asked with a `limit` above this is big.
    static let smallPage = 100

    /// Half the cores, at least one: the rest stay for writes and small reads.
    static let shared = BigPageReads(permits: max(1, ProcessInfo.processInfo.activeProcessorCount / 2))

    private struct State {
        var available: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(permits: Int) {
        state = Mutex(State(available: permits))
    }

    /// `body`'s result, run under a permit when the page is big (`limit` events), at once otherwise.
    func read<T>(limit: Int, _ body: () async throws -> T) async throws -> T {
        guard limit > Self.smallPage else { return try await body() }
        await acquire()
        defer { release() }
        // A request that gave up while it waited (its client left, its deadline passed) reads nothing.
        try Task.checkCancellation()
        return try await body()
    }

    /// `json`'s bytes, rendered on a thread of its own when the page is big (`limit` events), in place otherwise.
    static func render(_ json: @escaping @Sendable () -> JSONValue, limit: Int) async -> ByteBuffer {
        guard limit > smallPage else { return ByteBuffer(bytes: json().canonicalBytes) }
        return await withCheckedContinuation { continuation in
            renderer.async { continuation.resume(returning: ByteBuffer(bytes: json().canonicalBytes)) }
        }
    }

    private static let renderer = DispatchQueue(label: "ledger.big-pages")

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state in
                guard state.available > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.available -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    /// Hands the permit to the longest waiter, or puts it back.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
