import NIOCore
import NIOPosix

/// The port `serve` is to listen on, tried before anything starts: a port another process listens on is said at once,
/// before the embedded database starts and the migrations run. It also keeps that common failure off the path of a
/// service that fails once the service group runs — the group then cancels the others, and in one test run a
/// cancellation there deadlocked inside swift-async-algorithms' `merge` (ServiceLifecycle 2.13, 1.1.4), leaving
/// `serve` hung instead of exiting. A port taken between this check and the bind is still reported by the bind.
enum ListeningPort {
    static func ensureFree(host: String, port: Int) async throws {
        guard port != 0 else { return }
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port).get()
            try await channel.close()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw inUse(host: host, port: port)
        }
    }

    static func inUse(host: String, port: Int) -> CommandFailure {
        CommandFailure("""
            port \(port) on \(host) is already in use (another ledger serve?): stop that process, or choose another \
            port with --port or PORT (0: any free port)
            """)
    }
}
