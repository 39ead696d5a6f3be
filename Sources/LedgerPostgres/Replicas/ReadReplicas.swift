import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The streaming replicas `serve` may read from (`--database-read-url`), and how far behind each one is.
///
/// A monitor (`run`) reads the primary's WAL position and each replica's replayed position every `checkInterval`. A
/// replica that has replayed what the primary had written at a check is caught up as of that check; its lag is the
/// time since it last was (so at most about one interval while it keeps up under load). A replica that cannot be
/// reached, or lags more than `maximumLag`, is skipped until it is back: its reads go to the primary.
///
/// Read-your-writes: a read may name a position the client wrote (`seeing`): it is served by a usable replica that
/// holds the event at that position — its replay has passed that append's commit — waiting at most
/// `readYourWritesWait` for one, else by the primary.
public final class ReadReplicas: Sendable {
    public struct Replica: Sendable {
        public let name: String
        public let ledger: Ledger
    }

    public enum Health: Sendable, Equatable {
        /// Not caught up once since `serve` started (or not checked yet): not used.
        case unknown
        /// Caught up this long ago (zero: now); used while that is at most `maximumLag`.
        case behind(Duration)
        /// Unreachable, or a read on it failed: not used until a check finds it well.
        case down(String)
    }

    public let replicas: [Replica]
    let primary: SessionPool
    public let maximumLag: Duration
    public let readYourWritesWait: Duration
    let checkInterval: Duration
    let logger: Logger
    private let health: Mutex<[Health]>
    private let turn = Atomic<UInt>(0)

    /// `replicas` are named `replica-1`, `replica-2`… in the order given.
    init(
        primary: SessionPool, replicas: [SessionPool], maximumLag: Duration = .seconds(5),
        readYourWritesWait: Duration = .seconds(1), checkInterval: Duration = .milliseconds(250),
        logger: Logger = Logger(label: "ledger.replicas")
    ) {
        self.primary = primary
        self.replicas = replicas.enumerated().map { Replica(name: "replica-\($0.offset + 1)", ledger: .reading(from: $0.element, logger: logger)) }
        self.maximumLag = maximumLag
        self.readYourWritesWait = readYourWritesWait
        self.checkInterval = checkInterval
        self.logger = logger
        self.health = Mutex(Array(repeating: .unknown, count: replicas.count))
    }

    /// `serve`'s replicas, from their URLs (connected like the primary's pool, `Database.serviceConfiguration(limits:)`,
    /// `poolSize` sessions each); nil when no URL is given. Not running yet: `serve` runs `pools` as services.
    /// A URL naming several servers (a high-availability formation's) prefers a standby among them, else reads from
    /// whichever answers (`target_session_attrs=prefer-standby` unless it says otherwise).
    public static func connect(
        urls: [String], primary: LedgerDatabase, poolSize: Int, limits: ServerLimits, maximumLag: Duration,
        readYourWritesWait: Duration, logger: Logger
    ) throws -> ReadReplicas? {
        let clients = try urls.map { url in
            let named = try Database(url: url, defaultTarget: .preferStandby)
            var configuration = named.configuration
            configuration.options.maximumConnections = poolSize
            return SessionPool(
                configuration: Database(configuration: configuration).serviceConfiguration(limits: limits), servers: named.servers,
                backgroundLogger: Database.quieterLogger(logger))
        }
        guard !clients.isEmpty else { return nil }
        return ReadReplicas(
            primary: primary.client, replicas: clients, maximumLag: maximumLag, readYourWritesWait: readYourWritesWait,
            logger: logger)
    }

    /// The replicas' connection pools, for `serve` to run beside the primary's.
    public var pools: [any Service] { replicas.map(\.ledger.client) }

    /// Each replica's health, in order.
    public var report: [(name: String, health: Health)] {
        let health = health.withLock { $0 }
        return zip(replicas, health).map { ($0.name, $1) }
    }

    /// Watches the replicas until cancelled.
    public func run() async {
        var caughtUpAt: [ContinuousClock.Instant?] = Array(repeating: nil, count: replicas.count)
        var previous: (lsn: UInt64, at: ContinuousClock.Instant)?
        while !Task.isCancelled {
            let now = ContinuousClock.now
            guard let lsn = try? await Self.position("SELECT pg_current_wal_lsn()::text", on: primary, logger: logger) else {
                try? await Task.sleep(for: checkInterval)
                continue
            }
            for (index, replica) in replicas.enumerated() {
                let state: Health
                do {
                    // A read URL that is the primary itself (not in recovery) is always caught up; so is a standby
                    // promoted since (whose last replayed position stays where its recovery ended).
                    let replayed = try await Self.position(
                        "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text",
                        on: replica.ledger.client, logger: logger)
                    if replayed >= lsn {
                        caughtUpAt[index] = now
                    } else if let previous, replayed >= previous.lsn {
                        caughtUpAt[index] = max(caughtUpAt[index] ?? previous.at, previous.at)
                    }
                    // Reachable but not yet caught up once since serve started: its lag is not known, it is not used.
                    state = caughtUpAt[index].map { .behind(now - $0) } ?? .unknown
                } catch {
                    // `/readyz` is unauthenticated: it says what, the log says why.
                    state = .down("unreachable")
                    logger.debug("replica check failed", metadata: ["replica": "\(replica.name)", "error": "\(String(reflecting: error))"])
                }
                health.withLock { $0[index] = state }
            }
            previous = (lsn, now)
            try? await Task.sleep(for: checkInterval)
        }
    }

    /// A usable replica for a read that must see the event at `position` (nil: any read), taking turns; nil when
    /// none is usable (or none holds the position within `readYourWritesWait`): then the primary serves it.
    public func replica(seeing position: Int64?) async -> Replica? {
        let health = health.withLock { $0 }
        let usable = replicas.indices.filter { index in
            if case .behind(let lag) = health[index] { lag <= maximumLag } else { false }
        }
        guard !usable.isEmpty else { return nil }
        let first = Int(turn.wrappingAdd(1, ordering: .relaxed).newValue % UInt(usable.count))
        let ordered = usable.indices.map { usable[($0 + first) % usable.count] }.map { replicas[$0] }
        guard let position else { return ordered.first }
        let deadline = ContinuousClock.now + readYourWritesWait
        while true {
            for replica in ordered {
                // Bounded like the monitor's probes: a replica that just went away must not hold the read.
                let holds = try? await Deadline.$request.withValue(.seconds(1)) { try await replica.ledger.store.holds(position: position) }
                if holds == true { return replica }
            }
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// A replica failed a read: it is skipped until the monitor finds it well again.
    public func failed(_ replica: Replica, _ error: any Error) {
        guard let index = replicas.firstIndex(where: { $0.name == replica.name }) else { return }
        health.withLock { $0[index] = .down("a read failed") }
        logger.warning(
            "replica read failed; reading from the primary",
            metadata: ["replica": "\(replica.name)", "error": "\(String(reflecting: error))"])
    }

    /// A WAL position (`pg_lsn`, "16/B374D848"), as the number it stands for.
    private static func position(_ sql: String, on client: SessionPool, logger: Logger) async throws -> UInt64 {
        try await client.withConnection(within: .seconds(1), .reads) { connection in
            for try await text in try await connection.statement(PostgresQuery(unsafeSQL: sql), logger: logger).decode(String.self) {
                let halves = text.split(separator: "/")
                if halves.count == 2, let high = UInt64(halves[0], radix: 16), let low = UInt64(halves[1], radix: 16), high <= UInt32.max {
                    return high << 32 | low
                }
            }
            throw ReplicaPositionUnknown()
        }
    }
}

struct ReplicaPositionUnknown: Error {}

extension ReadReplicas.Health {
    /// How `/readyz` names it: `in_use` (caught up within `maximumLag`), `lagging`, `down` or `unknown`.
    public func state(maximumLag: Duration) -> String {
        switch self {
        case .unknown: "unknown"
        case .behind(let lag): lag <= maximumLag ? "in_use" : "lagging"
        case .down: "down"
        }
    }
}
