-- Consumers of the feed (issue 43): a named reader of the global feed (every kind of stream) that keeps its place in
-- the database, so it goes on after a restart, a crash or on another node exactly where it stopped
-- (Sources/LedgerPostgres/Consumers/). "Handle, then advance": the position moves only after the events before it
-- were handled — at least once; exactly once when the handling is written in the same transaction as the advance.
-- One node at a time holds a consumer, by a lease that it renews as it advances; a node that dies frees it when the
-- lease runs out.
CREATE TABLE feed_consumers (
    name            text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_.-]{0,62}$'),
    -- The last event handled, as the feed orders it: its writing transaction and its position (both NULL: none yet,
    -- the consumer starts at the beginning of the feed).
    transaction_xid xid8,
    position        bigint,
    handled         bigint NOT NULL DEFAULT 0 CHECK (handled >= 0),
    lease           uuid,
    leased_by       text,
    leased_until    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    advanced_at     timestamptz,
    CHECK ((transaction_xid IS NULL) = (position IS NULL)),
    CHECK ((lease IS NULL) = (leased_until IS NULL))
);

GRANT SELECT, INSERT, UPDATE ON feed_consumers TO ledger_service;
