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
    ///
    /// Roles belong to the whole cluster, so callers in other databases (or other nodes starting at the same moment)
    /// may alter the role at once; PostgreSQL then refuses all but one with "tuple concurrently updated", after the
    /// other has finished. The refused call tries again, so the last caller's password is the one that stands.
    static func allowLogin(password: String?, client: SessionPool, logger: Logger) async throws {
        for attempt in 1... {
            do {
                return try await client.queryToEnd("SELECT ledger_service_login(\(password))", logger: logger)
            } catch where attempt < 100 && isConcurrentRoleUpdate(error) {
                logger.debug("ledger_service was altered by another caller at the same moment; trying again")
            }
        }
    }

    /// PostgreSQL's refusal of a catalog row updated by another transaction at the same time (SQLSTATE XX000,
    /// which covers every internal error, so the message is what names this one).
    static func isConcurrentRoleUpdate(_ error: any Error) -> Bool {
        guard let server = (error as? PSQLError)?.serverInfo else { return false }
        return server[.sqlState] == "XX000" && server[.message] == "tuple concurrently updated"
    }

    /// True when the connected role could alter or drop events itself (a superuser, the tables' owner, or a role
    /// granted more than the service needs): `serve` warns, because then only the trigger guards the log.
    static func connectedRoleIsPrivileged(client: SessionPool, logger: Logger) async throws -> Bool {
        let rows = try await client.query(
            """
            SELECT r.rolsuper OR pg_has_role(c.relowner, 'USAGE')
                   OR has_table_privilege('events', 'UPDATE, DELETE, TRUNCATE')
            FROM pg_roles r, pg_class c
            WHERE r.rolname = current_user AND c.oid = 'events'::regclass
            """, .reads, logger: logger)
        for try await privileged in rows.decode(Bool.self) { return privileged }
        return true
    }
}
