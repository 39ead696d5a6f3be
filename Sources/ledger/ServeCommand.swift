import ArgumentParser
import Foundation
import Hummingbird
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerRecovery
import LedgerWebhooks
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// `ledger serve`: migrates, then serves the HTTP API until SIGTERM/SIGINT; then stops accepting, finishes
/// in-flight requests, closes the pool and stops the embedded database if it started it.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the HTTP API.")

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (default: $PORT, else 8080).") var port: Int?
    @Option(name: .customLong("pool-size"), help: "Database connections, shared out as a pool per event loop, at least 4 to a pool.") var poolSize = 8
    @Option(name: .customLong("seal-interval"), help: "Seconds between ledger digest checkpoints (0: never).")
    var sealInterval = 10
    @Option(name: .customLong("database-deadline"), help: "Seconds a request's database work may take before it is answered 503.")
    var databaseDeadline = 5
    @Option(name: .customLong("idle-timeout"), help: "Seconds a connection may send no complete request part before it is closed (0: never).")
    var idleTimeout = 30
    @Option(name: .customLong("body-timeout"), help: "Seconds a request's body may take to arrive before it is answered 408.")
    var bodyTimeout = 30
    @Option(name: .customLong("subscription-transfer"), help: "What a claim of a subscription by another account than its owner does: keep (refused and listed) or transfer (moved, recorded).")
    var subscriptionTransfer: SubscriptionTransferPolicy = .keep

    func validate() throws {
        guard databaseDeadline >= 1 else { throw ValidationError("--database-deadline must be at least 1 second") }
        // Bounded above too: a Duration of Int.max seconds traps when the clock adds it to now.
        guard databaseDeadline <= 86_400 else { throw ValidationError("--database-deadline must be at most 86400 seconds") }
        guard (0...31_536_000).contains(sealInterval) else { throw ValidationError("--seal-interval must be 0 to 31536000 seconds") }
        guard poolSize >= 1 else { throw ValidationError("--pool-size must be at least 1") }
        guard (0...86_400).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be 0 to 86400 seconds") }
        guard (1...86_400).contains(bodyTimeout) else { throw ValidationError("--body-timeout must be 1 to 86400 seconds") }
        if let port, !(0...65_535).contains(port) { throw ValidationError("--port must be 0 to 65535") }
    }
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var serverLimits: ServerLimitOptions
    @OptionGroup var providers: ProviderOptions
    @OptionGroup var recovery: RecoveryOptions
    @OptionGroup var replicaOptions: ReplicaOptions
    @OptionGroup var webhookOptions: WebhookOptions

    /// The feed consumers `serve` runs, each as a periodic job (`PeriodicJob.consuming`). None: the one consumer so
    /// far, webhooks' queueing, runs in the webhook loop's ticks, so that an event is sent one tick after it is
    /// recorded, not two.
    static let consumers: [FeedConsumer] = []

    func run() async throws {
        // Swift tasks run on NIO's event loops: no hop to the concurrency pool and back on every await of the
        // database (measured, 16 clients: history reads +15%, appends unchanged; BENCHMARKS.md).
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        CommandLogging.bootstrap(defaultLevel: .info)
        let logger = Logger(label: "ledger")
        let (verifiers, questions) = try providers.loadWithQuestions(logger: logger)
        let port = port ?? ProcessInfo.processInfo.environment["PORT"].flatMap(Int.init) ?? 8080
        try await ListeningPort.ensureFree(host: host, port: port)
        let lock = try ServeLock.acquire(url: database.url)
        let (resolved, started) = try Database.resolve(url: database.url, poolSize: poolSize)
        // Holding the lock, a cluster found running was left by a serve that ended without stopping it: it is ours now.
        let startedEmbedded = started || lock != nil
        if let lock, !started {
            logger.notice("adopting the embedded database left running in \(lock.directory.path) (the serve before this one ended without stopping it); it stops when this one does")
        }
        defer {
            if startedEmbedded {
                logger.info("stopping the embedded database")
                try? resolved.embedded?.stop()
            }
        }
        // Said before the first connection, which may take up to a minute to give up on an unreachable server.
        logger.info("connecting to PostgreSQL at \(resolved.target)")
        try await resolved.prepareForService(logger: logger) { operations, embedded in
            try await DevelopmentToken.ensure(operations: operations, dataDirectory: embedded.dataDirectory)
        }
        // The pool's sessions carry PostgreSQL's own limits; the owner's work above (migrations) has none.
        let ledger = try await resolved.serviceLedger(limits: serverLimits.limits, logger: logger)
        let replicas = try replicaOptions.replicas(primary: ledger, poolSize: poolSize, limits: serverLimits.limits, logger: logger)
        let recoverer = questions.askable.isEmpty
            ? nil : Recoverer(database: ledger, questions: questions, plan: recovery.plan, logger: logger)
        let where_ = resolved.embedded.map { "embedded database at \($0.dataDirectory.path)" } ?? "database from DATABASE_URL"
        let app = LedgerApplication.make(
            database: ledger, host: host, port: port, logger: logger, providers: verifiers, replicas: replicas,
            recoverer: recoverer, subscriptionTransfers: subscriptionTransfer, idleTimeout: idleTimeout > 0 ? .seconds(idleTimeout) : nil, bodyTimeout: .seconds(bodyTimeout)
        ) { port in
            announce("ledger listening on http://\(host):\(port) (\(where_))")
            announce("console: http://\(host):\(port)/console/")
        }
        let pools: [any Service] = [ledger] + (replicas?.pools ?? [])
        var loops: [BackgroundLoop] = []
        if let replicas {
            // The monitor only reads positions: stopping it mid-round loses nothing.
            loops.append(BackgroundLoop(name: "replica monitor") { await cancelWhenGracefulShutdown { await replicas.run() } })
        }
        var jobs: [PeriodicJob] = []
        if sealInterval > 0 {
            let operations = ledger.operations
            jobs.append(PeriodicJob(name: "digest sealer", interval: .seconds(sealInterval)) {
                try await operations.seal(whenAnotherIsSealing: .skip).map { "sealed the ledger digest \($0.pinned)" }
            })
        }
        if let recoverer, recovery.interval > 0 {
            logger.info("recovery: asking \(questions.askable.map(\.rawValue).joined(separator: ", ")) about orders that may be lost, every \(recovery.interval) s")
            jobs.append(PeriodicJob(name: "recovery", interval: .seconds(recovery.interval)) {
                let reports = try await recoverer.runRound()
                return reports.isEmpty ? nil : "asked about \(reports.count) order(s)"
            })
        }
        jobs += Self.consumers.map { PeriodicJob.consuming($0, on: ledger.consumers, every: .seconds(1)) }
        loops += jobs.map { $0.loop(logger: logger) }
        // Webhooks: each tick queues the feed's new events for the endpoints that select them and sends what is
        // queued (README, "Webhooks").
        let dispatcher = WebhookDispatcher(
            database: ledger, settings: try webhookOptions.settings(), node: Recoverer.thisNode, logger: logger)
        // On the event loops, not the background executor: its one thread, below the requests, is the digest
        // sealer's too, and a delivery waited behind a sealing page (p50 from append to send 456 ms at 200 events/s).
        loops.append(BackgroundLoop(name: "webhooks") { [interval = webhookOptions.interval] in
            await cancelWhenGracefulShutdown { await dispatcher.run(every: interval) }
        })
        do {
            try await Deadline.$request.withValue(.seconds(databaseDeadline)) {
                try await ServeServices.run(app: app, loops: loops, pools: pools, logger: logger)
            }
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw ListeningPort.inUse(host: host, port: port)
        }
    }
}

extension SubscriptionTransferPolicy: ExpressibleByArgument {}
