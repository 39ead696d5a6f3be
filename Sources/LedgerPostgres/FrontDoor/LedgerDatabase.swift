import Logging
import PostgresNIO
import ServiceLifecycle

/// The ledger opened on its database: its connection pools (`EventLoopPools`) and the four entry points every route
/// and command goes through, built once (`serve` at start, a command when it opens the database):
/// - `ledger`: orders — record, reads, the feed, evidence, providers' messages;
/// - `finance`: reports, reconciliation, anomalies;
/// - `operations`: digests, verification, rebuild, export, tokens, readiness;
/// - `recovery`: the schedule of orders the ledger asks their provider about (补单), and their attempts;
/// - `consumers`: readers of the feed that keep their place in it (`FeedConsumer`);
/// - `webhooks`: endpoints, their queue of deliveries and its attempts.
///
/// Nothing outside this module holds a pool: `serve` runs this value as a service (the pools' connections live while
/// it runs), and a command opens one with `Database.withLedger`.
public struct LedgerDatabase: Service {
    let pools: EventLoopPools
    public let ledger: Ledger
    public let finance: Finance
    public let operations: Operations
    public let recovery: RecoverySchedule
    public let consumers: FeedConsumers
    public let webhooks: Webhooks

    init(client: SessionPool, logger: Logger = Logger(label: "ledger")) {
        self.init(pools: EventLoopPools(client), logger: logger)
    }

    /// Each entry point uses the pool of the event loop it is called on (`EventLoopPools`).
    init(pools: EventLoopPools, logger: Logger = Logger(label: "ledger")) {
        self.pools = pools
        self.ledger = Ledger(pools: pools, logger: logger)
        self.finance = Finance(pools: pools, logger: logger)
        self.operations = Operations(pools: pools, logger: logger)
        self.recovery = RecoverySchedule(pools: pools, logger: logger)
        self.consumers = FeedConsumers(pools: pools, logger: logger)
        self.webhooks = Webhooks(pools: pools, logger: logger)
    }

    /// The first pool (`EventLoopPools.first`).
    var client: SessionPool { pools.first }

    /// Runs the pools until the task is cancelled or the service group shuts down.
    public func run() async throws {
        await pools.run()
    }
}
