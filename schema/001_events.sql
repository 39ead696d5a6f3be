-- The event store: one stream per order, one row per event, append-only.

-- One row per order stream: its current version. Appends lock this row, so writers to one order
-- take turns while writers to different orders never wait for each other.
CREATE TABLE streams (
    order_id text PRIMARY KEY,
    version  integer NOT NULL CHECK (version >= 0)
);

CREATE TABLE events (
    -- Global position: unique and increasing in the order positions were taken (not commit order; see the feed).
    position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id        text NOT NULL,
    -- 1, 2, 3… within the order, without gaps (the stream lock hands them out).
    version         integer NOT NULL CHECK (version >= 1),
    -- The idempotency key: the same event posted twice is stored once.
    event_id        uuid NOT NULL UNIQUE,
    type            text NOT NULL,
    data            jsonb NOT NULL,
    -- Who posted it: actor, request id, correlation and causation ids.
    metadata        jsonb NOT NULL DEFAULT '{}',
    -- The poster's clock (optional) and the database's clock.
    occurred_at     timestamptz,
    recorded_at     timestamptz NOT NULL,
    -- The writing transaction's id: the feed reads only below the oldest running transaction, so it never skips.
    transaction_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    -- Filled by the audit chain: SHA-256 over the previous event's hash and this event's canonical bytes.
    hash            bytea,
    UNIQUE (order_id, version)
);

-- The global feed pages in (transaction_xid, position) order.
CREATE INDEX events_feed ON events (transaction_xid, position);

-- Append-only in the database itself, whoever asks: no UPDATE, DELETE or TRUNCATE.
CREATE FUNCTION events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only: % is refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();
