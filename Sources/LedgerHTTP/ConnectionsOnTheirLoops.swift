import HummingbirdCore
import LedgerPostgres
import Logging
import NIOCore

/// Each connection's requests served on the event loop that reads and writes its socket (`EventLoopExecutor`): the
/// task that reads a request, runs the router and writes the answer prefers that loop, as do the database sessions it
/// leases there (`EventLoopPools`). Hummingbird starts a connection's task without a preference, and then every step
/// of a request in nonisolated async code went through the loop's queue twice (see `EventLoopExecutor`).
struct ConnectionsOnTheirLoops<Connection: ServerChildChannel>: ServerChildChannel {
    let connection: Connection

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Connection.Value> {
        connection.setup(channel: channel, logger: logger)
    }

    func handle(value: Connection.Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopExecutor(value.channel.eventLoop)) {
            await connection.handle(value: value, logger: logger)
        }
    }
}
