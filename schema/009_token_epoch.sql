-- A counter of token changes, so `serve` can keep authenticated tokens in memory and still refuse a revoked one on
-- its very next request, on every node: the statements a request runs anyway (an append's read, a history page)
-- also read this one-row table, and a request whose token was cached under an older epoch looks its token up again
-- before anything is written or answered (Sources/LedgerPostgres/Tokens/TokenCache.swift).
CREATE TABLE api_token_epoch (
    epoch bigint NOT NULL
);
INSERT INTO api_token_epoch VALUES (1);

-- Any change to the tokens moves the epoch, in the changing transaction: a revocation and its new epoch commit together.
CREATE FUNCTION api_tokens_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE api_token_epoch SET epoch = epoch + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER api_tokens_move_epoch
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION api_tokens_changed();

-- The service reads the epoch; only the token commands (the operator's role) move it.
CREATE OR REPLACE FUNCTION ledger_grant_service_privileges() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    GRANT SELECT, INSERT ON events, refusals, ledger_digests TO ledger_service;
    -- Upserts (the stream's version, the projections) need UPDATE; nothing needs DELETE.
    GRANT SELECT, INSERT, UPDATE ON streams, orders, order_transactions TO ledger_service;
    -- Authentication reads tokens and their epoch; creating and revoking them is the operator's (`ledger tokens`).
    GRANT SELECT ON api_tokens, api_token_epoch, schema_migrations TO ledger_service;
END
$$;

SELECT ledger_grant_service_privileges();
