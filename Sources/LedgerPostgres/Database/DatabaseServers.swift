import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The PostgreSQL servers a database URL names — one, or several as libpq takes them
/// (`postgres://h1:5432,h2:5432/ledger?target_session_attrs=read-write`, the URL `pg_autoctl show uri` prints) — and
/// which of them a session may use.
///
/// A high-availability formation (docs/operating.md) has one writable server among several, and which one it is changes
/// at a failover or a switchover. Every new session of a pool is opened here: the server that gave the last fitting
/// session is tried first, then the others in the URL's order; a session whose server does not fit `target` is closed
/// and the next server tried. When none fits (no primary yet, mid-failover), the open fails with `NoServerFits`, which
/// the API answers 503 while the pool keeps trying (`SessionPool`). One value is shared by all of a URL's pools, so
/// the first pool to find the new primary sends the others' next sessions straight to it.
public final class DatabaseServers: Sendable {
    public let addresses: [Address]
    public let target: TargetSession
    /// The index of the address that last gave a fitting session.
    private let lastFit = Atomic<Int>(0)

    public init(addresses: [Address], target: TargetSession) {
        self.addresses = addresses
        self.target = target
    }

    /// Where a server listens.
    public enum Address: Sendable, Equatable, CustomStringConvertible {
        case tcp(host: String, port: Int)
        case socket(path: String)

        public var description: String {
            switch self {
            case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            case .socket(let path): path
            }
        }
    }

    /// A session on a server that fits `target`, opened with `open` (which connects to one address).
    func session(
        open: (Address) async throws -> PostgresConnection, logger: Logger
    ) async throws -> PostgresConnection {
        let first = lastFit.load(ordering: .relaxed)
        let order = addresses.indices.map { (first + $0) % addresses.count }
        var refusals: [String] = []
        var lastError: (any Error)?
        for wanted in target.passes {
            for index in order {
                let address = addresses[index]
                do {
                    let connection = try await open(address)
                    guard wanted != .any else {
                        lastFit.store(index, ordering: .relaxed)
                        return connection
                    }
                    let role: ServerRole
                    do {
                        role = try await ServerRole.of(connection, logger: logger)
                    } catch {
                        SessionPool.close(connection)
                        throw error
                    }
                    if wanted.fits(role) {
                        lastFit.store(index, ordering: .relaxed)
                        return connection
                    }
                    SessionPool.close(connection)
                    refusals.append("\(address) is \(role)")
                } catch {
                    lastError = error
                    refusals.append("\(address): \(DatabaseUnreachable.reason(error))")
                }
            }
        }
        // One server that could not be reached: its own error, as a single-host URL reports it.
        if addresses.count == 1, let lastError, refusals.count == 1 { throw lastError }
        throw NoServerFits(target: target, refusals: refusals)
    }
}

/// libpq's `target_session_attrs`: which servers a session may use.
public enum TargetSession: String, Sendable, CaseIterable {
    case any
    /// Accepts writes: a primary, not in a read-only state (pg_auto_failover keeps a new primary read-only until the
    /// old one is known to have stopped writing).
    case readWrite = "read-write"
    case readOnly = "read-only"
    case primary
    case standby
    /// A standby when one is reachable, else any server.
    case preferStandby = "prefer-standby"

    /// The kinds of server looked for, one pass over the addresses each.
    var passes: [TargetSession] { self == .preferStandby ? [.standby, .any] : [self] }

    func fits(_ role: ServerRole) -> Bool {
        switch self {
        case .any, .preferStandby: true
        case .readWrite: !role.inRecovery && !role.readOnly
        case .readOnly: role.inRecovery || role.readOnly
        case .primary: !role.inRecovery
        case .standby: role.inRecovery
        }
    }
}

/// What a server is, asked on a new session: a standby (in recovery) or a primary, and whether it takes writes now.
struct ServerRole: Sendable, CustomStringConvertible {
    let inRecovery: Bool
    let readOnly: Bool

    static func of(_ connection: PostgresConnection, logger: Logger) async throws -> ServerRole {
        let rows = try await connection.statement(
            "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'", logger: logger)
        for try await (inRecovery, readOnly) in rows.decode((Bool, Bool).self) {
            return ServerRole(inRecovery: inRecovery, readOnly: readOnly)
        }
        throw ServerRoleUnknown()
    }

    var description: String {
        inRecovery ? "a standby" : readOnly ? "a primary not taking writes yet" : "the primary"
    }
}

/// The server answered the question of what it is with no row.
struct ServerRoleUnknown: Error, CustomStringConvertible {
    var description: String { "the server did not say whether it is a standby" }
}

/// No server named by the URL fits what the pool needs (no primary during a failover, every server down): the API
/// answers 503, and the pool tries again.
public struct NoServerFits: Error, CustomStringConvertible {
    public let target: TargetSession
    public let refusals: [String]
    public var description: String {
        "no \(target.rawValue) PostgreSQL server among those named (\(refusals.joined(separator: "; ")))"
    }
}
