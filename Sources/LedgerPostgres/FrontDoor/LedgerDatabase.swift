import Logging
import PostgresNIO
import ServiceLifecycle

/// The ledger opened on its database: one connection pool and the three entry points every route and command goes
/// through, built once (`serve` at start, a command when it opens the database):
/// - `ledger`: orders — record, reads, the feed, evidence, providers' messages;
/// - `finance`: reports, reconciliation, anomalies;
/// - `operations`: digests, verification, rebuild, export, tokens, readiness;
/// - `recovery`: the schedule of orders the ledger asks their provider about (补单), and their attempts.
///
/// Nothing outside this module holds the pool: `serve` runs this value as a service (the pool's connections live
/// while it runs), and a command opens one with `Database.withLedger`.
public struct LedgerDatabase: Service {
    let client: PostgresClient
    public let ledger: Ledger
    public let finance: Finance
    public let operations: Operations
    public let recovery: RecoverySchedule

    init(client: PostgresClient, logger: Logger = Logger(label: "ledger")) {
        self.client = client
        self.ledger = Ledger(client: client, logger: logger)
        self.finance = Finance(client: client, logger: logger)
        self.operations = Operations(client: client, logger: logger)
        self.recovery = RecoverySchedule(client: client, logger: logger)
    }

    /// Runs the pool until the task is cancelled or the service group shuts down.
    public func run() async throws {
        await client.run()
    }
}
