import Logging
import PostgresNIO

/// `ledger_service`, the least-privileged role `ledger serve` connects as (schema/006_service_role.sql): it may
/// read and append events, keep the projections, read tokens, log refusals and checkpoint digests — never change
/// or remove an event, never change the schema or a token. The operator's commands (`migrate`, `tokens`,
/// `rebuild`) connect as the database's owner.
public enum ServiceRole {
    public static let name = "ledger_service"

    /// Lets the role log in, with `password` (for TCP connections) or, when nil, without one (the embedded
    /// cluster's private socket trusts local users). Needs a role that may alter roles (CREATEROLE).
    public static func allowLogin(password: String?, client: PostgresClient, logger: Logger) async throws {
        try await client.queryToEnd("SELECT ledger_service_login(\(password))", logger: logger)
    }

    /// True when the connected role could alter or drop events itself (a superuser, the tables' owner, or a role
    /// granted more than the service needs): `serve` warns, because then only the trigger guards the log.
    public static func connectedRoleIsPrivileged(client: PostgresClient, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            SELECT r.rolsuper OR pg_has_role(c.relowner, 'USAGE')
                   OR has_table_privilege('events', 'UPDATE, DELETE, TRUNCATE')
            FROM pg_roles r, pg_class c
            WHERE r.rolname = current_user AND c.oid = 'events'::regclass
            """, logger: logger)
        for try await privileged in rows.decode(Bool.self) { return privileged }
        return true
    }
}
