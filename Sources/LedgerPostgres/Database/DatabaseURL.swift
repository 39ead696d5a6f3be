import Foundation
import PostgresNIO

extension Database {
    /// The database a URL names, as libpq reads it:
    /// - `postgres://user:password@host:port/database`;
    /// - several servers, `postgres://user@h1:5432,h2:5433/database?target_session_attrs=read-write`, tried in turn
    ///   for one that fits (`DatabaseServers`);
    /// - a Unix socket, `postgres://user@/database?host=/socket/directory` (the socket is `<directory>/.s.PGSQL.<port>`;
    ///   several directories separated by commas, `port=` one port or one per directory);
    /// - no user: `user=` in the query, else `PGUSER`, else the operating system's user, as libpq does.
    ///
    /// `target_session_attrs` is libpq's (`TargetSession`); without it, one server is used as it is and several are
    /// searched for `defaultTarget`. `connect_timeout` (seconds) bounds each server's connection, as in libpq; without
    /// it, 10 s for one server and `severalServersConnectTimeout` for each of several: a server whose machine died
    /// answers nothing, and the next server is tried only after it. TLS is not negotiated (`sslmode` is read by no
    /// one): the ledger expects its database on loopback or a private network.
    public init(
        url text: String, defaultTarget: TargetSession = .readWrite,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        let invalid = DatabaseURLError(url: text)
        guard let schemeEnd = text.range(of: "://"), ["postgres", "postgresql"].contains(text[..<schemeEnd.lowerBound]) else {
            throw invalid
        }
        // The authority may list several host:port pairs, which URLComponents does not take: they are read here, and
        // the rest of the URL is parsed with one placeholder host.
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let at = authority.lastIndex(of: "@")
        let userInfo = at.map { String(authority[..<$0]) + "@" } ?? ""
        let hostList = at.map { authority[authority.index(after: $0)...] } ?? authority
        guard let url = URLComponents(string: "postgres://\(userInfo)placeholder\(rest[authorityEnd...])") else { throw invalid }
        let query = url.queryItems ?? []
        func parameter(_ name: String) -> String? { query.last { $0.name == name }?.value }

        let username = url.user.map { $0.removingPercentEncoding ?? $0 } ?? parameter("user") ?? environment["PGUSER"]
            ?? ProcessInfo.processInfo.userName
        let password = url.password.map { $0.removingPercentEncoding ?? $0 } ?? parameter("password")
        let path = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        let database = path.isEmpty ? parameter("dbname") : path
        var addresses: [DatabaseServers.Address] = []
        if let sockets = parameter("host"), sockets.hasPrefix("/") {
            let directories = sockets.split(separator: ",").map(String.init)
            let ports = try (parameter("port") ?? "5432").split(separator: ",").map { text in
                guard let port = Int(text), (1...65535).contains(port) else { throw invalid }
                return port
            }
            guard ports.count == 1 || ports.count == directories.count else { throw invalid }
            addresses = directories.enumerated().map { index, directory in
                .socket(path: directory + "/.s.PGSQL.\(ports.count == 1 ? ports[0] : ports[index])")
            }
        } else {
            addresses = try hostList.split(separator: ",", omittingEmptySubsequences: false).map { try Self.address(String($0), url: text) }
        }
        guard !addresses.isEmpty, !username.isEmpty else { throw invalid }

        let named = parameter("target_session_attrs")
        var target = TargetSession.any
        if let named {
            guard let given = TargetSession(rawValue: named) else { throw DatabaseURLError(url: text, target: named) }
            target = given
        } else if addresses.count > 1 {
            target = defaultTarget
        }
        var configuration = switch addresses[0] {
        case .socket(let path):
            PostgresClient.Configuration(unixSocketPath: path, username: username, password: password, database: database)
        case .tcp(let host, let port):
            PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: .disable)
        }
        configuration.options.maximumConnections = 8
        if let given = parameter("connect_timeout") {
            guard let seconds = Int(given), (1...3600).contains(seconds) else { throw invalid }
            configuration.options.connectTimeout = .seconds(seconds)
        } else if addresses.count > 1 {
            configuration.options.connectTimeout = Self.severalServersConnectTimeout
        }
        let servers = addresses.count == 1 && target == .any ? nil : DatabaseServers(addresses: addresses, target: target)
        self.init(configuration: configuration, servers: servers)
    }

    /// How long a connection to each of several servers may take to open (`connect_timeout` unless given): a SYN to
    /// a dead machine is retried after 1 s, so a live server on a private network answers well within it.
    public static let severalServersConnectTimeout = Duration.seconds(3)

    /// One `host[:port]` of a URL's authority; an IPv6 address in brackets.
    private static func address(_ text: String, url: String) throws -> DatabaseServers.Address {
        var host = Substring(text)
        var port = 5432
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw DatabaseURLError(url: url) }
            let after = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let given = Int(after.dropFirst()) else { throw DatabaseURLError(url: url) }
                port = given
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard let given = Int(host[host.index(after: colon)...]) else { throw DatabaseURLError(url: url) }
            port = given
            host = host[..<colon]
        }
        guard !host.isEmpty, (1...65535).contains(port) else { throw DatabaseURLError(url: url) }
        return .tcp(host: String(host), port: port)
    }

    /// The first server's configuration of `url` (`init(url:)`); a pool made from it alone uses that server only.
    public static func configuration(fromURL text: String) throws -> PostgresClient.Configuration {
        try Database(url: text).configuration
    }
}

public struct DatabaseURLError: Error, CustomStringConvertible {
    public let url: String
    /// A `target_session_attrs` the ledger does not know, or (`writes`) one that would not find the writable server.
    public var target: String?
    public var writes = false

    public var description: String {
        if let target, writes {
            return "DATABASE_URL names several servers with target_session_attrs=\(target), but the ledger writes: "
                + "use target_session_attrs=read-write (or leave it out)"
        }
        if let target {
            return "DATABASE_URL's target_session_attrs=\(target) is not one of "
                + TargetSession.allCases.map(\.rawValue).joined(separator: ", ")
        }
        return "DATABASE_URL must look like postgres://user:password@host:5432/database (several servers: "
            + "postgres://user@h1:5432,h2:5432/database?target_session_attrs=read-write; a socket: "
            + "postgres://user@/database?host=/socket/dir)"
    }
}
