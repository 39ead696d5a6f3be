-- Rotation over the API (`POST /v1/tokens/{name}/rotate`) is asked by a token, and this function decides, in the
-- transaction that rotates, whether that token may: authentication is confirmed before anything is written, so a
-- token revoked meanwhile (or a moment before) rotates nothing. The rules:
-- - the caller is named by its *current* secret: a replaced secret is still accepted for its token's ordinary work
--   during the overlap, but never rotates (else an attacker holding a leaked secret rotates it again and locks the
--   operator's fresh one out);
-- - the caller holds `tokens:admin`;
-- - the target's scopes are within the caller's: rotating hands the new secret to the caller, so a token that could
--   rotate a wider one would gain its reach (an admin-only token reading finance with a rotated all-scopes secret).
--   Within its scopes it may rotate others as well as itself: an operator's token rolls out services' new secrets.
-- Returns one row: `rotated` with when the replaced secret ends, or why not (`unauthenticated`, `replaced_secret`,
-- `forbidden`, `not_found`), writing nothing then.
CREATE FUNCTION ledger_rotate_token_as(caller_hash bytea, token_name text, new_hash bytea, overlap interval)
RETURNS TABLE (rotation_outcome text, replaced_secret_ends timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    caller_scopes text[];
    target_scopes text[];
BEGIN
    -- FOR SHARE: a revocation of the caller waits for this transaction, or this one sees it.
    SELECT t.scopes INTO caller_scopes FROM api_tokens t
    WHERE t.secret_hash = caller_hash AND t.revoked_at IS NULL FOR SHARE;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM api_tokens t WHERE t.previous_secret_hash = caller_hash AND t.revoked_at IS NULL
                   AND t.previous_valid_until > now()) THEN
            RETURN QUERY SELECT 'replaced_secret'::text, NULL::timestamptz;
        ELSE
            RETURN QUERY SELECT 'unauthenticated'::text, NULL::timestamptz;
        END IF;
        RETURN;
    END IF;
    IF NOT 'tokens:admin' = ANY (caller_scopes) THEN
        RETURN QUERY SELECT 'forbidden'::text, NULL::timestamptz;
        RETURN;
    END IF;
    SELECT t.scopes INTO target_scopes FROM api_tokens t WHERE t.name = token_name AND t.revoked_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::timestamptz;
        RETURN;
    END IF;
    IF NOT target_scopes <@ caller_scopes THEN
        RETURN QUERY SELECT 'forbidden'::text, NULL::timestamptz;
        RETURN;
    END IF;
    RETURN QUERY
    UPDATE api_tokens t
    SET previous_secret_hash = t.secret_hash, previous_valid_until = now() + overlap, secret_hash = new_hash
    WHERE t.name = token_name AND t.revoked_at IS NULL
    RETURNING 'rotated'::text, t.previous_valid_until;
END
$$;
REVOKE EXECUTE ON FUNCTION ledger_rotate_token_as(bytea, text, bytea, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger_rotate_token_as(bytea, text, bytea, interval) TO ledger_service;

-- The service rotates only as a token that may (above); rotating without a caller stays the operator's
-- (`ledger tokens rotate`, as the owner).
REVOKE EXECUTE ON FUNCTION ledger_rotate_token(text, bytea, interval) FROM ledger_service;
