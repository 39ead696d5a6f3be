-- API tokens: bearer secrets stored only as SHA-256 hashes, each with a name (the actor recorded on events)
-- and its scopes. A revoked token stays for the record.
CREATE TABLE api_tokens (
    name        text PRIMARY KEY,
    secret_hash bytea NOT NULL UNIQUE,
    scopes      text[] NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
