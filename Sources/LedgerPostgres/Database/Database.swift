import Foundation
import Logging
import PostgresNIO

/// Where the ledger's PostgreSQL is: the URL an operator gave, or the embedded cluster in the data directory.
public struct Database: Sendable {
    public let configuration: PostgresClient.Configuration
    /// The embedded cluster, when no URL was given.
    public let embedded: EmbeddedPostgres?
    /// The servers to choose among, when the URL named several or a `target_session_attrs`; nil: the one server of
    /// `configuration`, used as it is.
    public let servers: DatabaseServers?

    public init(configuration: PostgresClient.Configuration, embedded: EmbeddedPostgres? = nil, servers: DatabaseServers? = nil) {
        self.configuration = configuration
        self.embedded = embedded
        self.servers = servers
    }

    /// What `serve` connects its pool with: on the embedded cluster, the least-privileged `ledger_service` over the
    /// private socket; with a URL, the URL's own role (which the operator points at `ledger_service`).
    public var serviceConfiguration: PostgresClient.Configuration {
        guard embedded != nil else { return configuration }
        var configuration = configuration
        configuration.username = ServiceRole.name
        return configuration
    }

    /// `serviceConfiguration` with PostgreSQL's own limits on every session (see `ServerLimits`): what `serve`'s
    /// pool connects with. The operator's commands use `configuration`, which has none.
    ///
    /// Its sessions also plan prepared statements once (`plan_cache_mode = force_generic_plan`): under the default
    /// (`auto`) PostgreSQL kept re-planning the append's write statement on every call (its custom plans fold the
    /// flags that gate its parts), a quarter of PostgreSQL's time per append; generic plans took PostgreSQL's CPU per
    /// single-event append from 1.6 to 1.1 ms (BENCHMARKS.md). It applies to every statement of these sessions;
    /// the hot ones look rows up by key, where the generic plan is the custom one.
    ///
    /// A generic plan is made once per session, with the statistics and table sizes of that moment, and kept until
    /// the table is next analysed. Made while `events` was small (a new database, the first minute of a burst), it
    /// scanned the whole table on every append until autovacuum caught up: appends fell from ~790/s to ~350/s after
    /// a burst of 13,000 events. So the sessions also plan with `enable_seqscan = off`: wherever an index serves, the
    /// plan uses it whatever the statistics say, and every hot statement reads a bounded number of pages. A query no
    /// index serves (a report over a whole table, the one-row token epoch) still scans it. JIT is off: a disabled scan
    /// counts 10^10 in a plan's cost, far past `jit_above_cost`, and compiling a plan costs more than a key lookup.
    ///
    /// And they name the schema this binary was built for (`NodeSchema`), so that `ledger migrate` sees older nodes.
    public func serviceConfiguration(limits: ServerLimits) -> PostgresClient.Configuration {
        var configuration = serviceConfiguration.limited(by: limits)
        let parameters = Self.servicePlanning + Self.serverKeepAlive + [("application_name", NodeSchema.applicationName)]
        configuration.options.additionalStartupParameters.removeAll { name, _ in parameters.contains { $0.0 == name } }
        configuration.options.additionalStartupParameters.append(contentsOf: parameters)
        return configuration
    }

    /// How the service's sessions plan their statements (above).
    static let servicePlanning = [("plan_cache_mode", "force_generic_plan"), ("enable_seqscan", "off"), ("jit", "off")]

    /// TCP keep-alives sent by PostgreSQL on each of the service's sessions: a probe after 30 s idle, then every 10 s,
    /// the session given up after 3 unanswered. Over TCP only (a Unix socket ignores them).
    static let serverKeepAlive = [("tcp_keepalives_idle", "30"), ("tcp_keepalives_interval", "10"), ("tcp_keepalives_count", "3")]

    /// `url` (or `DATABASE_URL`) when given; else the embedded cluster in `LEDGER_DATA_DIR` or `./.ledger`,
    /// started if it is not running. Only `creating` (serve, migrate) initialises a cluster where there is none: a
    /// command run in another directory must not answer from a new, empty ledger as if the data were gone.
    public static func resolve(
        url: String?, environment: [String: String] = ProcessInfo.processInfo.environment, poolSize: Int = 8,
        creating: Bool = true
    ) throws -> (database: Database, startedEmbedded: Bool) {
        if let url = url ?? environment["DATABASE_URL"], !url.isEmpty {
            let named = try Database(url: url, environment: environment)
            // The ledger writes: a URL naming several servers must let it find the writable one.
            if let servers = named.servers, ![.readWrite, .primary].contains(servers.target) {
                throw DatabaseURLError(url: url, target: servers.target.rawValue, writes: true)
            }
            var configuration = named.configuration
            configuration.options.maximumConnections = poolSize
            return (Database(configuration: configuration, servers: named.servers), false)
        }
        let embedded = EmbeddedPostgres(dataDirectory: EmbeddedPostgres.defaultDataDirectory(environment: environment))
        guard creating || embedded.isInitialised else { throw NoLedgerDatabase(dataDirectory: embedded.dataDirectory.path) }
        let started = try embedded.start()
        try embedded.createDatabaseIfMissing()
        var configuration = embedded.configuration()
        configuration.options.maximumConnections = poolSize
        return (Database(configuration: configuration, embedded: embedded), started)
    }

    /// Runs `body` with a pool of sessions to this database, then closes the pool.
    func withClient<T: Sendable>(
        logger: Logger = Logger(label: "ledger.db"), _ body: @Sendable @escaping (SessionPool) async throws -> T
    ) async throws -> T {
        let client = SessionPool(configuration: configuration, servers: servers, backgroundLogger: Self.quieterLogger(logger))
        do {
            let result = try await body(client)
            await client.close()
            return result
        } catch where !client.hasConnected && DatabaseErrors.isUnavailable(error) {
            await client.close()
            throw DatabaseUnreachable(target: target, reason: error)
        } catch {
            await client.close()
            throw error
        }
    }

    /// Where this database is, for people: `user@host:port/database`, `user@socket/database` or
    /// `user@h1:5432,h2:5432/database (read-write)`, never a password.
    public var target: String {
        let place = if let servers {
            servers.addresses.map(\.description).joined(separator: ",")
        } else {
            configuration.unixSocketPath ?? "\(configuration.host ?? "localhost"):\(configuration.port ?? 5432)"
        }
        let wanted = servers.map { " (\($0.target.rawValue))" } ?? ""
        return "\(configuration.username)@\(place)/\(configuration.database ?? configuration.username)\(wanted)"
    }
}

/// PostgreSQL could not be reached: not one session opened for a command or `serve`'s start. Says where it tried and
/// why, where a bare `PSQLError` said neither.
public struct DatabaseUnreachable: Error, CustomStringConvertible {
    public let target: String
    public let reason: any Error
    public var description: String {
        "cannot reach PostgreSQL at \(target): \(Self.reason(reason)) (check DATABASE_URL, and that the server is running and accepts connections)"
    }

    /// Why a session could not be opened, in PostgreSQL's words where it gave some.
    static func reason(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            return error.serverInfo?[.message] ?? error.underlying.map { "\($0)" } ?? "\(error.code)"
        }
        return "\((error as? SessionNotOpened)?.underlying ?? error)"
    }
}

/// PostgreSQL could not be reached: no connection to its address or socket (refused, unreachable, timed out).
public struct SessionNotOpened: Error, CustomStringConvertible {
    public let underlying: any Error
    public var description: String { "no connection to PostgreSQL (\(underlying))" }
}

/// A command that only uses a ledger found none: no `DATABASE_URL`, and no embedded cluster where it looked.
public struct NoLedgerDatabase: Error, CustomStringConvertible {
    public let dataDirectory: String
    public var description: String {
        "no ledger database in \(dataDirectory) (LEDGER_DATA_DIR, default ./.ledger): set LEDGER_DATA_DIR to the "
            + "directory `ledger serve` uses, or DATABASE_URL; only `ledger serve` and `ledger migrate` create one"
    }
}

extension Database {
    /// Which database this is, for a command that found nothing in it.
    public var name: String {
        if let embedded { return "the embedded database in \(embedded.dataDirectory.path)" }
        return "database \(configuration.database ?? "(default)") from DATABASE_URL"
    }
}

extension Database {
    /// The pool's own logger: errors only (PostgresNIO logs each session's opening and closing below that).
    public static func quieterLogger(_ logger: Logger) -> Logger {
        var logger = logger
        logger.logLevel = max(logger.logLevel, .error)
        return logger
    }
}
