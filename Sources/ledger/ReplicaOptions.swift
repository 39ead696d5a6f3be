import ArgumentParser
import Foundation
import LedgerPostgres
import Logging
import PostgresNIO

/// `serve`'s streaming replicas for the reads that may lag (`ReadReplicas`, `ReadSource`): none unless given.
struct ReplicaOptions: ParsableArguments {
    @Option(name: .customLong("database-read-url"), help: """
        A streaming replica for the reads that may lag: orders, histories, chains, refusals, lists, the feed \
        (repeatable; default: $DATABASE_READ_URL, comma-separated). Connect as the same role as --database-url.
        """)
    var urls: [String] = []
    @Option(name: .customLong("replica-max-lag"), help: "Milliseconds a replica may lag before its reads go to the primary.")
    var maximumLagMilliseconds = 5_000
    @Option(name: .customLong("read-your-writes-wait"), help: "Milliseconds a read with Ledger-Min-Position waits for a replica that holds that position before the primary answers it.")
    var readYourWritesWaitMilliseconds = 1_000

    func validate() throws {
        guard (1...3_600_000).contains(maximumLagMilliseconds) else { throw ValidationError("--replica-max-lag must be 1 to 3600000 milliseconds") }
        guard (0...60_000).contains(readYourWritesWaitMilliseconds) else { throw ValidationError("--read-your-writes-wait must be 0 to 60000 milliseconds") }
    }

    /// The replicas, connected like the primary's pool (`Database.serviceConfiguration(limits:)`); nil when none.
    func replicas(primary: PostgresClient, poolSize: Int, limits: ServerLimits, logger: Logger) throws -> ReadReplicas? {
        let given = urls.isEmpty
            ? (ProcessInfo.processInfo.environment["DATABASE_READ_URL"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            : urls
        let clients = try given.filter { !$0.isEmpty }.map { url in
            var configuration = try Database.configuration(fromURL: url)
            configuration.options.maximumConnections = poolSize
            return PostgresClient(
                configuration: Database(configuration: configuration).serviceConfiguration(limits: limits),
                backgroundLogger: Database.quieterLogger(logger))
        }
        guard !clients.isEmpty else { return nil }
        logger.info("reads that may lag go to \(clients.count) replica(s) when they lag at most \(maximumLagMilliseconds) ms")
        return ReadReplicas(
            primary: primary, replicas: clients, maximumLag: .milliseconds(maximumLagMilliseconds),
            readYourWritesWait: .milliseconds(readYourWritesWaitMilliseconds), logger: logger)
    }
}
