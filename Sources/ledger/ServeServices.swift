import Hummingbird
import LedgerPostgres
import LedgerRecovery
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// What `serve` runs, and the order it stops them in on SIGTERM or SIGINT: first the HTTP server (no new
/// connections; requests in flight finish), then the background loops (a seal under way completes), and last the
/// database clients every one of them uses. A service group stops its services in the reverse of their order.
///
/// The order is the fix for a `serve` that never exited: the clients used to stop with the server, while the digest
/// sealer, holding one pooled connection, waited for a second that the stopping pool never gave.
/// A second signal cancels what still runs and ends `serve` at once. Once `serve` begins to stop, for whatever reason —
/// a signal, or a service that failed or ended on its own (the group then cancels the others) — it ends within
/// `shutdownLimit` and `cancellationGrace` more, without waiting for what is still stuck: a pool waiting for a lease
/// that never returns, or a task that misses its cancellation (swift-async-algorithms' `merge`, issue #430, under
/// Hummingbird's date cache), cannot hold it.
enum ServeServices {
    static let shutdownLimit: Duration = .seconds(10)
    static let cancellationGrace: Duration = .seconds(5)

    static func run(app: some Service, loops: [BackgroundLoop], pools: [any Service], logger: Logger) async throws {
        try await run(
            app: app, loops: loops, pools: pools, logger: logger,
            signals: await UnixSignalsSequence(trapping: .sigterm, .sigint), limit: shutdownLimit, grace: cancellationGrace)
    }

    /// As above, stopping on `signals`: a test gives its own, since trapping the process's leaves them ignored for
    /// good (and ignored signals are inherited by every process it starts after).
    static func run(
        app: some Service, loops: [BackgroundLoop], pools: [any Service], logger: Logger,
        signals: some AsyncSequence<UnixSignal, Never> & Sendable, limit: Duration, grace: Duration
    ) async throws {
        let stopped = FirstOutcome()
        let stopping = StopLimit(within: limit + grace, settling: stopped, logger: logger)
        let services: [any Service] = pools + loops + [app]
        var configuration = ServiceGroupConfiguration(
            services: services.map { WatchedService(service: $0, stopping: stopping) }, logger: logger)
        configuration.maximumGracefulShutdownDuration = limit
        let group = ServiceGroup(configuration: configuration)
        // Signals are watched here, not by the group, which takes a signal either for shutdown or for cancellation.
        let running = Task {
            do {
                try await group.run()
                stopped.settle(.success(()))
            } catch {
                stopped.settle(.failure(error))
            }
        }
        let watcher = Task {
            var caught = 0
            for await signal in signals {
                caught += 1
                if caught == 1 {
                    logger.info("\(signal): stopping (a second signal stops at once)")
                    stopping.begin()
                    await group.triggerGracefulShutdown()
                } else {
                    logger.warning("\(signal) again: stopping at once")
                    running.cancel()
                    stopped.settle(.success(()))
                }
            }
        }
        defer { watcher.cancel() }
        try await stopped.value().get()
    }
}

/// Ends `serve` a bounded time after it began to stop: settles `stopped` with the first failure that began it (or
/// success, for a signal) unless the service group's own end settled it first.
final class StopLimit: Sendable {
    private let state = Mutex<(began: Bool, failure: (any Error)?)>((false, nil))
    private let within: Duration
    private let stopped: FirstOutcome
    private let logger: Logger

    init(within: Duration, settling stopped: FirstOutcome, logger: Logger) {
        self.within = within
        self.stopped = stopped
        self.logger = logger
    }

    func begin(after failure: (any Error)? = nil) {
        let first = state.withLock { state -> Bool in
            defer { state.began = true }
            if !state.began { state.failure = failure }
            return !state.began
        }
        guard first else { return }
        Task {
            try? await Task.sleep(for: within)
            if stopped.settle(state.withLock { $0.failure }.map { .failure($0) } ?? .success(())) {
                logger.warning("still stopping after \(within): ended without waiting for the rest")
            }
        }
    }
}

/// One of `serve`'s services, whose end — a failure, or a return before shutdown — begins the stop limit.
struct WatchedService: Service, CustomStringConvertible {
    let service: any Service
    let stopping: StopLimit

    func run() async throws {
        do {
            try await service.run()
        } catch {
            stopping.begin(after: error)
            throw error
        }
        // A return before shutdown is a failure too (the group reports it so): `serve` exits non-zero either way.
        stopping.begin(after: Task.isShuttingDownGracefully ? nil : EndedEarly(service: description))
    }

    var description: String { String(describing: service) }

    struct EndedEarly: Error, CustomStringConvertible {
        let service: String
        var description: String { "\(service) ended while serve was running" }
    }
}

/// The first outcome settled, by whichever comes first: the service group's end, or a reason to stop waiting for it.
final class FirstOutcome: Sendable {
    private let state = Mutex<(outcome: Result<Void, any Error>?, waiter: CheckedContinuation<Result<Void, any Error>, Never>?)>((nil, nil))

    /// Whether this was the first outcome (the one `value()` answers).
    @discardableResult
    func settle(_ outcome: Result<Void, any Error>) -> Bool {
        let (first, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Result<Void, any Error>, Never>?) in
            guard state.outcome == nil else { return (false, nil) }
            state.outcome = outcome
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume(returning: outcome)
        return first
    }

    func value() async -> Result<Void, any Error> {
        await withCheckedContinuation { continuation in
            let settled = state.withLock { state -> Result<Void, any Error>? in
                if state.outcome == nil { state.waiter = continuation }
                return state.outcome
            }
            if let settled { continuation.resume(returning: settled) }
        }
    }
}
