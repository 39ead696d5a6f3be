import PostgresNIO

/// PostgreSQL's own limits on each of the service's sessions: `statement_timeout`, `lock_timeout` and
/// `idle_in_transaction_session_timeout`, sent as startup parameters, so every connection the pool opens (and every
/// one it opens again after an outage) has them from its first statement, with no `SET` to forget.
///
/// Why the server needs them although the client has a deadline (`serve --database-deadline`, 5 s): at the deadline
/// the service answers 503 and closes the connection, but PostgreSQL notices a vanished client only when it next
/// writes to the socket. Until then the abandoned query runs on, holding its locks, its snapshot (which holds back
/// the feed and vacuum) and a backend. These limits make PostgreSQL end such work itself. Each stays at or above the
/// deadline, so PostgreSQL never cuts off work the client is still waiting for:
/// - statement 10 s: twice the deadline; no request's statement comes near it (the longest page reads at most a
///   thousand rows), so a statement still running then has been abandoned.
/// - lock 5 s: the deadline's own length; the deadline started earlier (it covers the wait for a connection), so a
///   waiter whose caller is still waiting is never refused first.
/// - idle in transaction 15 s: a session left inside an open transaction (its client gone mid-transaction) is
///   ended, and its row locks, which block every append to those orders, go with it.
/// The operator's commands (migrate, rebuild, verify, export, the CLI's reconcile) connect without them: a rebuild of
/// a million events runs for minutes in one transaction.
public struct ServerLimits: Sendable, Hashable {
    /// `statement_timeout`; zero: none.
    public var statement: Duration
    /// `lock_timeout`; zero: none.
    public var lock: Duration
    /// `idle_in_transaction_session_timeout`; zero: none.
    public var idleInTransaction: Duration

    public init(statement: Duration = .seconds(10), lock: Duration = .seconds(5), idleInTransaction: Duration = .seconds(15)) {
        self.statement = statement
        self.lock = lock
        self.idleInTransaction = idleInTransaction
    }

    /// What `serve` uses unless told otherwise.
    public static let service = ServerLimits()

    /// The settings by PostgreSQL's names, in milliseconds.
    public var startupParameters: [(String, String)] {
        [
            ("statement_timeout", "\(Self.milliseconds(statement))ms"),
            ("lock_timeout", "\(Self.milliseconds(lock))ms"),
            ("idle_in_transaction_session_timeout", "\(Self.milliseconds(idleInTransaction))ms"),
        ]
    }

    /// Whole milliseconds, within what PostgreSQL takes for these settings (0 … 2^31 − 1), so that no duration,
    /// however large or negative, overflows or is refused at connect.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let maximum = Int64(Int32.max)
        guard seconds >= 0 else { return 0 }
        guard seconds < maximum / 1000 else { return maximum }
        return min(maximum, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

extension PostgresClient.Configuration {
    /// This configuration with `limits` on every session it opens (replacing any earlier ones).
    public func limited(by limits: ServerLimits) -> Self {
        var configuration = self
        let names = Set(limits.startupParameters.map(\.0))
        configuration.options.additionalStartupParameters.removeAll { names.contains($0.0) }
        configuration.options.additionalStartupParameters += limits.startupParameters
        return configuration
    }
}
