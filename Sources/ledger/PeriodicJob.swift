import LedgerPostgres
import LedgerRecovery
import Logging
import ServiceLifecycle

/// A loop `serve` runs beside the server until shutdown: `body` returns when its task is cancelled, or sooner when it
/// checks `Task.isShuttingDownGracefully` itself.
struct BackgroundLoop: Service {
    let name: String
    let body: @Sendable () async -> Void

    init(name: String, body: @escaping @Sendable () async -> Void) {
        self.name = name
        self.body = body
    }

    func run() async throws {
        await body()
    }
}

/// A job `serve` runs every `interval`: each round claims what it may (a lease, a turn) and does it, and says what it
/// did (nil: nothing worth a line in the log). Every periodic job of `serve` is one: the digest sealer, the recovery
/// rounds (Apple's notification history swept first), each feed consumer — so a new one is a name, an interval and
/// its round.
///
/// A round runs on the background executor (`BackgroundExecutor`), below the requests. Shutdown ends the wait between
/// rounds, never a round under way (the pools it uses stop after the loops), and a round cut short by the stop limit
/// loses nothing: what it held is held under a lease that runs out. A round that fails is logged, and the next one
/// tried after the interval.
struct PeriodicJob: Sendable {
    let name: String
    let interval: Duration
    let round: @Sendable () async throws -> String?

    func loop(logger: Logger) -> BackgroundLoop {
        BackgroundLoop(name: name) { [name, interval, round] in
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                do {
                    try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
                    let did = try await withTaskExecutorPreference(BackgroundExecutor.shared) { try await round() }
                    if let did { logger.debug("\(name): \(did)") }
                } catch is CancellationError {
                    return
                } catch {
                    // Reflecting: PostgresNIO's plain description of a server error hides its SQLSTATE and message.
                    logger.error("\(name): a round failed: \(String(reflecting: error))")
                }
            }
        }
    }
}

extension PeriodicJob {
    /// A feed consumer's job: each round handles what the feed holds after its position, if no other node holds it
    /// (`FeedConsumers.run`).
    static func consuming(_ consumer: FeedConsumer, on consumers: FeedConsumers, every interval: Duration) -> PeriodicJob {
        PeriodicJob(name: "consumer \(consumer.name)", interval: interval) {
            let handled = try await consumers.run(consumer, node: Recoverer.thisNode)
            return handled.flatMap { $0 > 0 ? "handled \($0) event(s)" : nil }
        }
    }
}
