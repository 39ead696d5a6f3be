import Foundation
import Logging
import NIOPosix
import PostgresNIO

/// How the executable opens the ledger: a command with `withLedger`, `serve` with `prepareForService` and
/// `serviceLedger`. No caller outside this module handles a connection pool.
extension Database {
    /// Migrates, then runs `body` with the ledger opened as the database's own role (the operator's commands);
    /// the pool closes when `body` returns.
    public func withLedger<T: Sendable>(
        logger: Logger = Logger(label: "ledger"), _ body: @Sendable @escaping (LedgerDatabase) async throws -> T
    ) async throws -> T {
        try await withClient(logger: logger) { client in
            try await Migrator(client: client, logger: logger).migrate()
            return try await body(LedgerDatabase(client: client, logger: logger))
        }
    }

    /// `ledger migrate`: the pending migrations, as the database's owner; with `servicePassword`, lets
    /// `ledger_service` log in with it. Returns the names of the migrations applied.
    public func migrate(allowOlderNodes: Bool, servicePassword: String?, logger: Logger) async throws -> [String] {
        try await withClient(logger: logger) { client in
            let applied = try await Migrator(client: client, allowOlderNodes: allowOlderNodes, logger: logger).migrate()
            if let servicePassword {
                try await ServiceRole.allowLogin(password: servicePassword, client: client, logger: logger)
            }
            return applied
        }
    }

    /// What `serve` does as the owner before it serves: pending migrations, then `embeddedSetUp` on the embedded
    /// cluster (the development token), which also lets `ledger_service` log in over its private socket (it trusts
    /// local users, so no password).
    public func prepareForService(
        logger: Logger, embeddedSetUp: @Sendable @escaping (Operations, EmbeddedPostgres) async throws -> Void
    ) async throws {
        try await withLedger(logger: logger) { owner in
            guard let embedded else { return }
            try await embeddedSetUp(owner.operations, embedded)
            try await ServiceRole.allowLogin(password: nil, client: owner.client, logger: logger)
        }
    }

    /// The ledger as `serve` runs it: `ledger_service`'s pool of `poolSize` (`resolve`) sessions, each under
    /// `limits` (`serviceConfiguration(limits:)`). Not running yet: `serve` runs it as a service.
    ///
    /// It connects once first, so a wrong password fails before the address is announced, and warns when the role
    /// could change events: then only the append-only trigger guards them.
    public func serviceLedger(limits: ServerLimits, logger: Logger) async throws -> LedgerDatabase {
        let configuration = serviceConfiguration(limits: limits)
        try await Database(configuration: configuration, servers: servers).withClient(logger: logger) { service in
            if try await ServiceRole.connectedRoleIsPrivileged(client: service, logger: logger) {
                logger.warning("""
                    serve is connected as a role that may change or remove events; only the append-only trigger guards \
                    them. Connect as \(ServiceRole.name) (see `ledger migrate --help`).
                    """)
            }
        }
        let pools = EventLoopPools(
            configuration: configuration, servers: servers, group: MultiThreadedEventLoopGroup.singleton,
            backgroundLogger: Self.quieterLogger(logger))
        return LedgerDatabase(pools: pools, logger: logger)
    }
}
