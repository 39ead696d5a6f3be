#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix

/// TCP keep-alive on every session to a server reached over TCP. A server whose host is gone — powered off, cut off by
/// the network, replaced in a failover that moved its address — sends nothing more, not even a reset, and without
/// keep-alive an idle session to it stays open for good: the next request leased it and waited out its whole deadline
/// (a 503), and a session that never carries traffic again never learns. With it, the kernel asks a silent server after
/// `idle`, then every `interval`, and after `probes` unanswered asks closes the socket: the pool forgets a closed idle
/// session when it next leases (`SessionPool.leaseIdle`), within ~25 s of the last word. libpq's defaults leave this to
/// the system's two hours; a server that is merely busy still answers a probe from its kernel, so these are safe.
/// A Unix socket has no peer host to lose: nothing is set on one.
enum SessionKeepalive {
    static let idle = 10
    static let interval = 5
    static let probes = 3

    /// `bootstrap` with keep-alive on the sockets it opens.
    static func onTCP(_ bootstrap: ClientBootstrap) -> ClientBootstrap {
        bootstrap
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelOption(tcp(idleOption), value: idle)
            .channelOption(tcp(TCP_KEEPINTVL), value: interval)
            .channelOption(tcp(TCP_KEEPCNT), value: probes)
    }

    /// The option for `idle` (Darwin names it `TCP_KEEPALIVE`).
    #if canImport(Darwin)
    static let idleOption = TCP_KEEPALIVE
    #else
    static let idleOption = TCP_KEEPIDLE
    #endif

    /// The TCP-level socket option `name`.
    static func tcp(_ name: Int32) -> ChannelOptions.Types.SocketOption {
        ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: name))
    }
}
