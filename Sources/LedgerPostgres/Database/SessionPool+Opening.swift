import Logging
import NIOCore
import NIOPosix
import PostgresNIO

extension SessionPool {
    /// A new session on a server that fits (`DatabaseServers`), or on `configuration`'s one server.
    func openSession(on eventLoop: any EventLoop, id: Int, logger: Logger) -> EventLoopFuture<PostgresConnection> {
        guard let servers else { return openSession(at: Self.address(of: configuration), on: eventLoop, id: id, logger: logger) }
        return eventLoop.makeFutureWithTask {
            try await servers.session(
                open: { try await self.openSession(at: $0, on: eventLoop, id: id, logger: logger).get() }, logger: logger)
        }
    }

    /// A new session at `address`: a channel opened here, started by PostgresNIO, then watched for its commits
    /// (`CommitWatch`, which needs the channel PostgresNIO keeps to itself when it opens one).
    private func openSession(
        at address: DatabaseServers.Address, on eventLoop: any EventLoop, id: Int, logger: Logger
    ) -> EventLoopFuture<PostgresConnection> {
        let opening = Self.openChannel(to: address, on: eventLoop, connectTimeout: TimeAmount(configuration.options.connectTimeout))
        return opening.flatMapErrorThrowing { throw SessionNotOpened(underlying: $0) }.flatMap { channel in
            var session = PostgresConnection.Configuration(
                establishedChannel: channel, username: self.configuration.username, password: self.configuration.password,
                database: self.configuration.database)
            session.options.connectTimeout = TimeAmount(self.configuration.options.connectTimeout)
            session.options.requireBackendKeyData = self.configuration.options.requireBackendKeyData
            session.options.additionalStartupParameters = self.configuration.options.additionalStartupParameters
            return PostgresConnection.connect(on: eventLoop, configuration: session, id: id, logger: logger)
                .flatMap { CommitWatches.shared.watch($0, channel: channel) }
                .flatMapError { error in
                    channel.close(promise: nil)
                    return eventLoop.makeFailedFuture(error)
                }
        }
    }

    /// A session's channel to `address`, before PostgreSQL's startup; over TCP with keep-alive (`SessionKeepalive`).
    static func openChannel(
        to address: DatabaseServers.Address, on eventLoop: any EventLoop, connectTimeout: TimeAmount
    ) -> EventLoopFuture<any Channel> {
        let bootstrap = ClientBootstrap(group: eventLoop).connectTimeout(connectTimeout)
        return switch address {
        case .socket(let path): bootstrap.connect(unixDomainSocketPath: path)
        case .tcp(let host, let port): SessionKeepalive.onTCP(bootstrap).connect(host: host, port: port)
        }
    }

    /// The one server a configuration names.
    private static func address(of configuration: PostgresClient.Configuration) -> DatabaseServers.Address {
        if let socket = configuration.unixSocketPath { return .socket(path: socket) }
        return .tcp(host: configuration.host ?? "localhost", port: configuration.port ?? 5432)
    }
}
