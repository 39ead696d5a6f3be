import Foundation
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a webhook may be sent: not to this machine, its link or a private network — a URL given to the ledger must
/// not reach a service behind it — unless the operator allows the host or the address (`--webhook-allow-hosts`:
/// host names, addresses or CIDRs). Checked on the address actually connected to: the host is resolved, every
/// address it resolves to is checked, and the connection goes to the address checked (`WebhookSender`), so a name that
/// resolves to 127.0.0.1 is refused as 127.0.0.1 is.
public struct WebhookAddressPolicy: Sendable {
    let allowedHosts: Set<String>
    let allowedRanges: [IPAddressRange]

    /// Loopback, "this network", private (RFC 1918, CGNAT, IPv6 unique local), link-local, multicast and reserved.
    static let refusedRanges: [IPAddressRange] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
        "::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b::/96",
    ].compactMap(IPAddressRange.init)

    /// Nothing allowed beyond public addresses.
    public static let strict = WebhookAddressPolicy(allowedHosts: [], allowedRanges: [])

    /// The address to connect to for `host`: the first it resolves to, once every one was checked; throws
    /// `RefusedAddress` when one is refused (a name that resolves both outside and inside is refused), `Unresolved`
    /// when it resolves to nothing.
    func address(for host: String, port: Int) async throws -> IPAddress {
        let addresses: [IPAddress]
        if let literal = IPAddress(host) {
            addresses = [literal]
        } else {
            addresses = try await Self.resolve(host, port: port)
        }
        guard let first = addresses.first else { throw Unresolved(host: host) }
        if allowedHosts.contains(host.lowercased()) { return first }
        for address in addresses where !isAllowed(address) {
            throw RefusedAddress(host: host, address: address)
        }
        return first
    }

    func isAllowed(_ address: IPAddress) -> Bool {
        let checked = address.embeddedIPv4 ?? address
        if allowedRanges.contains(where: { $0.contains(checked) || $0.contains(address) }) { return true }
        return !Self.refusedRanges.contains { $0.contains(checked) }
    }

    /// The host's addresses, by the system's resolver, on NIO's thread pool (`getaddrinfo` blocks).
    static func resolve(_ host: String, port: Int) async throws -> [IPAddress] {
        try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &list) == 0, let list else { throw Unresolved(host: host) }
            defer { freeaddrinfo(list) }
            var addresses: [IPAddress] = []
            var entry: UnsafeMutablePointer<addrinfo>? = list
            while let current = entry {
                if let socketAddress = current.pointee.ai_addr {
                    switch Int32(current.pointee.ai_family) {
                    case AF_INET:
                        socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                            var address = v4.pointee.sin_addr
                            addresses.append(IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) }))
                        }
                    case AF_INET6:
                        socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                            var address = v6.pointee.sin6_addr
                            addresses.append(IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) }))
                        }
                    default: break
                    }
                }
                entry = current.pointee.ai_next
            }
            var seen: Set<IPAddress> = []
            return addresses.filter { seen.insert($0).inserted }
        }
    }

    public struct InvalidAllowEntry: Error, CustomStringConvertible {
        public let entry: String
        public var description: String { "webhook allow entry \(entry) is neither a host name, an address nor a CIDR" }
    }

    struct RefusedAddress: Error, CustomStringConvertible {
        let host: String
        let address: IPAddress
        var description: String {
            "\(host) resolves to \(address), a loopback, link-local or private address (allow it with --webhook-allow-hosts)"
        }
    }

    struct Unresolved: Error, CustomStringConvertible {
        let host: String
        var description: String { "\(host) does not resolve" }
    }
}

extension WebhookAddressPolicy {
    /// `allow`: host names (compared without case), addresses and CIDRs, as `--webhook-allow-hosts` takes them
    /// (comma-separated); a malformed CIDR is refused, not taken for a host name.
    public init(allow: [String]) throws {
        var hosts: Set<String> = [], ranges: [IPAddressRange] = []
        for entry in allow.map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            if let range = IPAddressRange(entry) {
                ranges.append(range)
            } else if entry.contains("/") {
                throw InvalidAllowEntry(entry: entry)
            } else {
                hosts.insert(entry.lowercased())
            }
        }
        self.init(allowedHosts: hosts, allowedRanges: ranges)
    }
}
