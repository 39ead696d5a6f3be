import ArgumentParser
import Foundation
import LedgerPostgres
import Logging

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

    /// The replicas, connected like the primary's pool (`ReadReplicas.connect`); nil when none.
    func replicas(primary: LedgerDatabase, poolSize: Int, limits: ServerLimits, logger: Logger) throws -> ReadReplicas? {
        let given = urls.isEmpty
            ? (ProcessInfo.processInfo.environment["DATABASE_READ_URL"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            : urls
        guard let replicas = try ReadReplicas.connect(
            urls: given.filter { !$0.isEmpty }, primary: primary, poolSize: poolSize, limits: limits,
            maximumLag: .milliseconds(maximumLagMilliseconds), readYourWritesWait: .milliseconds(readYourWritesWaitMilliseconds),
            logger: logger)
        else { return nil }
        logger.info("reads that may lag go to \(replicas.replicas.count) replica(s) when they lag at most \(maximumLagMilliseconds) ms")
        return replicas
    }
}
