#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import LedgerPostgres
import NIOCore
import NIOPosix
import Testing

/// A session to a server over TCP learns when the server's host is gone (`SessionKeepalive`): its socket asks a
/// silent peer after 10 s, every 5 s, and gives up after 3 unanswered asks. The kernel does the asking; what the
/// ledger owns, and what this checks on a real socket, is that every session's socket is set so.
@Suite struct SessionKeepaliveTests {
    @Test func aSessionOverTCPAsksASilentServerWhetherItIsStillThere() async throws {
        let listener = try await PrimaryFollowingTests.silentListener()
        let port = try #require(listener.localAddress?.port)
        let channel = try await SessionPool.openChannel(
            to: .tcp(host: "127.0.0.1", port: port), on: MultiThreadedEventLoopGroup.singleton.any(),
            connectTimeout: .seconds(5)
        ).get()
        func value(_ option: ChannelOptions.Types.SocketOption) async throws -> Int {
            try await channel.getOption(option).get()
        }
        #expect(try await value(.socketOption(.so_keepalive)) != 0)
        #expect(try await value(SessionKeepalive.tcp(SessionKeepalive.idleOption)) == 10)
        #expect(try await value(SessionKeepalive.tcp(TCP_KEEPINTVL)) == 5)
        #expect(try await value(SessionKeepalive.tcp(TCP_KEEPCNT)) == 3)
        try await channel.close()
        try await listener.close()
    }
}
