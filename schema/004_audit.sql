-- Tamper evidence (LedgerCore.EventSeal): each event's exact hashed bytes, a hash chain per order, and
-- checkpoints of the running digest over the whole ledger.

-- The canonical bytes the event's hash covers: kept as given, because jsonb does not keep bytes.
ALTER TABLE events ADD COLUMN canonical bytea;

-- Every event appended from now on is sealed. (NOT VALID: rows from before this migration are not rewritten,
-- which the append-only trigger would refuse anyway; `ledger verify` reports them as unsealed.)
ALTER TABLE events ADD CONSTRAINT events_sealed CHECK (hash IS NOT NULL AND canonical IS NOT NULL) NOT VALID;

-- The running digest, checkpointed by `serve` in the background and by `ledger seal`: after `event_count`
-- events in feed order, the last of them at `position`, the digest was `digest`.
CREATE TABLE ledger_digests (
    event_count bigint PRIMARY KEY,
    position    bigint NOT NULL,
    digest      bytea NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
