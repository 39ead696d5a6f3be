import ArgumentParser
import Foundation
import LedgerPostgres
import Logging

/// `serve`'s streaming replicas for the reads that may lag (`ReadReplicas`, `ReadSource`): none unless given.
struct ReplicaOptions: ParsableArguments {
    @Option(name: .customLong("database-read-url"), help: """
        A streaming replica for the reads that may lag: orders, histories, chains, refusals, lists, the feed \
        (repeatable; default: $DATABASE_READ_URL, comma-separated). Connect as the same role as --database-url. \
        A URL naming several servers (h1:5432,h2:5432) reads from a standby among them when there is one.
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
        let given = urls.isEmpty ? Self.urls(in: ProcessInfo.processInfo.environment["DATABASE_READ_URL"] ?? "") : urls
        guard let replicas = try ReadReplicas.connect(
            urls: given.filter { !$0.isEmpty }, primary: primary, poolSize: poolSize, limits: limits,
            maximumLag: .milliseconds(maximumLagMilliseconds), readYourWritesWait: .milliseconds(readYourWritesWaitMilliseconds),
            logger: logger)
        else { return nil }
        logger.info("reads that may lag go to \(replicas.replicas.count) replica(s) when they lag at most \(maximumLagMilliseconds) ms")
        return replicas
    }

    /// `DATABASE_READ_URL`'s URLs: separated by commas, where a comma inside a URL that names several servers
    /// (`postgres://u@h1:5432,h2:5432/db`) does not start a new one — only one followed by `postgres(ql)://` does.
    static func urls(in text: String) -> [String] {
        var urls: [String] = []
        for piece in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = piece.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("postgres://") || trimmed.hasPrefix("postgresql://") || urls.isEmpty {
                urls.append(trimmed)
            } else {
                urls[urls.count - 1] += "," + trimmed
            }
        }
        return urls.filter { !$0.isEmpty }
    }
}
