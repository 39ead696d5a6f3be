import HummingbirdCore
import LedgerPostgres
import Logging
import NIOCore

/// Each connection's requests served on the event loop that reads and writes its socket (`EventLoopExecutor`): the
/// task that reads a request, runs the router and writes the answer prefers that loop, as do the database sessions it
/// leases there (`EventLoopPools`). Hummingbird starts a connection's task without a preference, and then every step
/// of a request in nonisolated async code went through the loop's queue twice (see `EventLoopExecutor`).
///
/// With a `HistoryLane`, each connection's pipeline ends with its handler, after Hummingbird's connection state
/// handler and before the async channel.
struct ConnectionsOnTheirLoops<Connection: ServerChildChannel>: ServerChildChannel {
    let connection: Connection
    let lane: HistoryLane?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Connection.Value> {
        connection.setup(channel: channel, logger: logger).flatMapThrowing { [lane] value in
            guard let lane else { return value }
            let pipeline = channel.pipeline.syncOperations
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(HistoryLaneHandler(lane: lane, logger: logger), position: .after(state))
            return value
        }
    }

    func handle(value: Connection.Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopExecutor(value.channel.eventLoop)) {
            await connection.handle(value: value, logger: logger)
        }
    }
}
