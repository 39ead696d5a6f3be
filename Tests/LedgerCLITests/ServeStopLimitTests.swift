import Logging
import ServiceLifecycle
import Synchronization
import Testing
import UnixSignals

@testable import ledger

/// `serve` ends a bounded time after it began to stop, even when something it runs never stops: after a service
/// failed (the group cancels the others) as after a signal. Before, a failure without a signal waited for the service
/// group for ever, and a task that missed its cancellation (swift-async-algorithms' `merge`, issue #430) held it.
@Suite("CLI: serve ends within its limit when a service fails and another never stops")
struct ServeStopLimitTests {
    struct Broken: Error {}

    /// Fails once `other` runs, as a database client whose server went away does.
    struct Failing: Service {
        let other: Gate
        func run() async throws {
            await other.entered.wait()
            throw Broken()
        }
    }

    /// Ignores graceful shutdown and cancellation alike until the test lets it go.
    struct Stuck: Service {
        let gate: Gate
        func run() async {
            gate.entered.open()
            await gate.released.wait()
        }
    }

    final class Gate: Sendable {
        let entered = Latch(), released = Latch()
    }

    /// Opens once; waiting on it cannot be cancelled.
    final class Latch: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }
    }

    struct StillRunning: Error {}

    @Test func aFailureEndsServeWithinItsLimitAndReportsTheFailure() async throws {
        let gate = Gate()
        defer { gate.released.open() }
        let logger = Logger(label: "serve-stop-limit")
        // Raced against a bound of its own, so that a serve that does not end fails this test instead of hanging the
        // run (the stuck service ignores the cancellation a test time limit would send).
        let ended = FirstOutcome()
        Task {
            do {
                try await ServeServices.run(
                    app: Failing(other: gate), loops: [], pools: [Stuck(gate: gate)], logger: logger,
                    signals: AsyncStream<UnixSignal> { _ in }, limit: .milliseconds(100), grace: .milliseconds(100))
                ended.settle(.success(()))
            } catch {
                ended.settle(.failure(error))
            }
        }
        Task {
            try? await Task.sleep(for: .seconds(30))
            ended.settle(.failure(StillRunning()))
        }
        await #expect(throws: Broken.self, "serve ends, with the failure") { try await ended.value().get() }
    }
}
