import LedgerTestSupport
import Logging
import ServiceLifecycle
import Testing
import UnixSignals

@testable import ledger

/// `serve` ends a bounded time after it began to stop, even when something it runs never stops: after a service
/// failed (the group cancels the others) as after a signal. Before, a failure without a signal waited for the service
/// group for ever, and a task that missed its cancellation (swift-async-algorithms' `merge`, issue #430) held it.
@Suite("CLI: serve ends within its limit when a service fails and another never stops")
struct ServeStopLimitTests {
    struct Broken: Error {}

    /// Fails once the stuck service runs, as a database client whose server went away does.
    struct Failing: Service {
        let stuckRuns: Gate
        func run() async throws {
            await stuckRuns.wait()
            throw Broken()
        }
    }

    /// Ignores graceful shutdown and cancellation alike until the test lets it go.
    struct Stuck: Service {
        let runs: Gate, released: Gate
        func run() async {
            runs.open()
            await released.wait()
        }
    }

    /// Returns at once, as a loop that gave up would.
    struct Returning: Service {
        let stuckRuns: Gate
        func run() async {
            await stuckRuns.wait()
        }
    }

    struct StillRunning: Error {}

    /// Runs `serve`'s services, `app` beside a service that never stops, with a 100 ms limit and 100 ms grace; how it
    /// ended. Raced against a bound of its own, so that a serve that does not end fails the test instead of hanging
    /// the run (the stuck service ignores the cancellation a test time limit would send).
    static func end(of app: (_ stuckRuns: Gate) -> some Service) async -> Result<Void, any Error> {
        let stuckRuns = Gate(), released = Gate()
        defer { released.open() }
        let app = app(stuckRuns)
        let ended = FirstOutcome()
        Task {
            do {
                try await ServeServices.run(
                    app: app, loops: [], pools: [Stuck(runs: stuckRuns, released: released)],
                    logger: Logger(label: "serve-stop-limit"), signals: AsyncStream<UnixSignal> { _ in },
                    limit: .milliseconds(100), grace: .milliseconds(100))
                ended.settle(.success(()))
            } catch {
                ended.settle(.failure(error))
            }
        }
        Task {
            try? await Task.sleep(for: .seconds(30))
            ended.settle(.failure(StillRunning()))
        }
        return await ended.value()
    }

    @Test func aFailureEndsServeWithinItsLimitAndReportsTheFailure() async throws {
        let ended = await Self.end { Failing(stuckRuns: $0) }
        #expect(throws: Broken.self, "serve ends, with the failure") { try ended.get() }
    }

    @Test func aServiceEndingEarlyEndsServeWithinItsLimitAsAFailure() async throws {
        let ended = await Self.end { Returning(stuckRuns: $0) }
        #expect(throws: WatchedService.EndedEarly.self, "serve ends, and not as after a signal") { try ended.get() }
    }
}
