import PostgresNIO

/// What a database error means to a caller that must answer for it (the API's error mapping): the caller's bad input,
/// or a database that cannot serve now. Everything else is a fault of ours.
public enum DatabaseErrors {
    /// Text PostgreSQL refuses to store or compare (a NUL byte, an invalid encoding): the caller's input, not a bug.
    public static func isUnstorableText(_ error: any Error) -> Bool {
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return ["22021", "22P05"].contains(state)
    }

    /// Connection failures (a session closed before its statement was sent: `SessionClosed`), a server shutting down
    /// or refusing connections, no answer within the deadline, a pool already closed (`serve` stopping), a commit
    /// PostgreSQL did not confirm, work PostgreSQL itself ended at the service's limits (`ServerLimits`: 57014
    /// statement timeout, 55P03 lock timeout, 25P03 idle in transaction), a write that reached a server not taking
    /// writes (25006, mid-failover) or no server fitting (`NoServerFits`): worth a retry, not a 500.
    public static func isUnavailable(_ error: any Error) -> Bool {
        if error is DatabaseTimeout || error is SessionPoolClosed || error is CommitUnconfirmed || error is DatabaseUnreachable
            || error is SessionNotOpened || error is NoServerFits || error is SessionClosed {
            return true
        }
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] {
            return state.hasPrefix("08") || ["57P01", "57P02", "57P03", "53300", "57014", "55P03", "25P03", "25006"].contains(state)
        }
        return [.connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed]
            .contains(error.code)
    }
}
