import HummingbirdCore
import LedgerPostgres
import Logging
import NIOCore
import NIOHTTP1

/// Each connection's requests served on the event loop that reads and writes its socket (`EventLoopExecutor`): the
/// task that reads a request, runs the router and writes the answer prefers that loop, as do the database sessions it
/// leases there (`EventLoopPools`). Hummingbird starts a connection's task without a preference, and then every step
/// of a request in nonisolated async code went through the loop's queue twice (see `EventLoopExecutor`).
///
/// Each connection's pipeline is Hummingbird's but for its connection state handler, replaced by a `ConnectionFront`
/// right after the HTTP/1 parser: the idle timeout, graceful shutdown and the `HistoryLane` when there is one.
struct ConnectionsOnTheirLoops<Connection: ServerChildChannel>: ServerChildChannel {
    let connection: Connection
    /// `serve --idle-timeout`: nil keeps idle connections open.
    let idleTimeout: TimeAmount?
    let lane: HistoryLane?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Connection.Value> {
        connection.setup(channel: channel, logger: logger).flatMapThrowing { [idleTimeout, lane] value in
            let pipeline = channel.pipeline.syncOperations
            pipeline.removeHandler(context: try pipeline.context(handlerType: HTTPConnectionStateHandler.self), promise: nil)
            let parser = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            let front = ConnectionFront(idleTimeout: idleTimeout, lane: lane, logger: logger)
            try pipeline.addHandler(front, position: .after(parser))
            return value
        }
    }

    func handle(value: Connection.Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopExecutor(value.channel.eventLoop)) {
            await connection.handle(value: value, logger: logger)
        }
    }
}
