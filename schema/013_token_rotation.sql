-- Rotating a token's secret keeps its name (the actor recorded on its events) and its scopes: the new secret takes
-- `secret_hash`, and the one it replaces stays valid until `previous_valid_until` (the overlap a service needs to
-- roll its new secret out), then is refused. Revoking the token refuses both.
ALTER TABLE api_tokens
    ADD COLUMN previous_secret_hash bytea UNIQUE,
    ADD COLUMN previous_valid_until timestamptz;

-- The service may rotate a token (`POST /v1/tokens/{name}/rotate`, scope tokens:admin) but not otherwise change the
-- tokens table: this function, run with its owner's rights, is all it is granted. It moves the token epoch (the
-- UPDATE's trigger), so every node looks again at the tokens it had cached. Returns when the previous secret ends;
-- NULL when there is no active token of that name.
CREATE FUNCTION ledger_rotate_token(token_name text, new_hash bytea, overlap interval)
RETURNS timestamptz LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
    UPDATE api_tokens
    SET previous_secret_hash = secret_hash, previous_valid_until = now() + overlap, secret_hash = new_hash
    WHERE name = token_name AND revoked_at IS NULL
    RETURNING previous_valid_until
$$;
REVOKE EXECUTE ON FUNCTION ledger_rotate_token(text, bytea, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger_rotate_token(text, bytea, interval) TO ledger_service;

-- (schema/010 and 012 name the file that records the providers' messages; it is now
-- Sources/LedgerPostgres/Append/Ledger+ProviderMessages.swift. An applied migration is never edited.)
