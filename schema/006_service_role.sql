-- Least privilege: `ledger_service` is the role `ledger serve` connects as. It may read and append events, keep the
-- projections, read tokens, log refusals and checkpoint digests — nothing more: no UPDATE or DELETE on events, no
-- DDL, no token changes. The append-only trigger on events stays as a second wall, for every role.
-- Roles belong to the cluster, not to one database, so the role is created only where it is missing; it is
-- created without LOGIN, and `ledger_service_login` lets it log in.

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ledger_service') THEN
        CREATE ROLE ledger_service NOLOGIN;
    END IF;
END
$$;

-- The service's privileges, in one place. Called here and by `ledger rebuild`, whose swapped-in projection tables
-- start with no grants. A migration that adds a table the service uses replaces this function and calls it.
CREATE FUNCTION ledger_grant_service_privileges() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    GRANT SELECT, INSERT ON events, refusals, ledger_digests TO ledger_service;
    -- Upserts (the stream's version, the projections) need UPDATE; nothing needs DELETE.
    GRANT SELECT, INSERT, UPDATE ON streams, orders, order_transactions TO ledger_service;
    -- Authentication reads tokens; creating and revoking them is the operator's (`ledger tokens`).
    GRANT SELECT ON api_tokens, schema_migrations TO ledger_service;
END
$$;

-- Lets `ledger_service` log in: with a password (for TCP), or without one (the embedded cluster's private socket
-- trusts its local users). ALTER ROLE takes no bind parameters, so the password is quoted by format's %L.
CREATE FUNCTION ledger_service_login(password text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF password IS NULL THEN
        ALTER ROLE ledger_service LOGIN;
    ELSE
        EXECUTE format('ALTER ROLE ledger_service LOGIN PASSWORD %L', password);
    END IF;
END
$$;

REVOKE EXECUTE ON FUNCTION ledger_grant_service_privileges(), ledger_service_login(text) FROM PUBLIC;

SELECT ledger_grant_service_privileges();
