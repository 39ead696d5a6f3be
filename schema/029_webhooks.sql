-- Webhooks (issue 45): the ledger tells a backend what it recorded, signed, at least once, in order per stream
-- (Sources/LedgerPostgres/Webhooks/, Sources/LedgerWebhooks/; README, "Webhooks").
--
-- An endpoint: where to send, which events (selectors: '*', '<kind>.*' or an event type), and the key it signs with.
-- The key must be readable to sign: the service may read it as it reads the tokens' table, and nobody else (the
-- table is the owner's; no API answer nor listing shows it after it was made). While a rotation overlaps, the
-- previous key signs too, until previous_secret_until. An endpoint is sent the events recorded from its creation on.
CREATE TABLE webhook_endpoints (
    name                  text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_.-]{0,62}$'),
    url                   text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2048),
    event_selectors       text[] NOT NULL CHECK (cardinality(event_selectors) > 0),
    secret                bytea NOT NULL CHECK (length(secret) >= 24),
    previous_secret       bytea,
    previous_secret_until timestamptz,
    -- Disabled by an operator or by the receiver's 410 Gone (disabled_reason says which): nothing is sent, events
    -- still queue. Failing: a delivery used up its retries; nothing is sent until an operator enables it again.
    enabled               boolean NOT NULL DEFAULT true,
    disabled_reason       text,
    failing_since         timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    -- The node delivering it, until when (one node at a time).
    lease                 uuid,
    leased_by             text,
    leased_until          timestamptz,
    CHECK ((previous_secret IS NULL) = (previous_secret_until IS NULL))
);

-- Whether an endpoint's selectors select an event of `kind` and `type` (the one rule; Sources/LedgerCore/Webhooks/
-- WebhookEventSelector.swift checks a selector's form when an endpoint is added).
CREATE FUNCTION webhook_selects(selectors text[], kind text, type text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT selectors && ARRAY['*', kind || '.*', type] $$;

-- One event to send to one endpoint (written by the feed consumer `webhooks`, in the transaction that advances it:
-- each event queued once per endpoint). Pending until delivered_at (or given_up_at: its retries used up). A stream's
-- event is sent only once its earlier ones to this endpoint were delivered (version order): only the oldest pending
-- of a stream is scheduled (next_attempt_at); the ones after it wait unscheduled (NULL) and are scheduled when it is
-- delivered, so a receiver down for hours leaves one due row per stream to look at, not its whole backlog.
CREATE TABLE webhook_deliveries (
    endpoint        text NOT NULL REFERENCES webhook_endpoints (name) ON DELETE CASCADE,
    event_id        uuid NOT NULL,
    position        bigint NOT NULL,
    kind            text NOT NULL,
    stream_id       text NOT NULL,
    version         integer NOT NULL,
    event_type      text NOT NULL,
    queued_at       timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz,
    delivered_at    timestamptz,
    given_up_at     timestamptz,
    -- Its last attempt found no receiver (no connection, no answer in time, 502, 503 or 504): when another delivery
    -- to the endpoint succeeds, the receiver is back, and this one is due at once rather than at its back-off's end.
    receiver_absent boolean NOT NULL DEFAULT false,
    PRIMARY KEY (endpoint, event_id)
);

-- "What is due?" and "does an earlier event of this stream wait?"
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint, next_attempt_at) WHERE delivered_at IS NULL;
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint, kind, stream_id, version) WHERE delivered_at IS NULL;
-- Listing and replay by feed position.
CREATE INDEX webhook_deliveries_positions ON webhook_deliveries (endpoint, position);

-- Every attempt: when, by which node, the receiver's status (NULL when none came), how long it took, and the first
-- bytes of its answer (or what went wrong).
CREATE TABLE webhook_attempts (
    endpoint     text NOT NULL,
    event_id     uuid NOT NULL,
    attempted_at timestamptz NOT NULL,
    node         text NOT NULL,
    outcome      text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'gone', 'timeout', 'unreachable', 'refused_address')),
    status       integer,
    latency_ms   integer NOT NULL CHECK (latency_ms >= 0),
    response     text NOT NULL DEFAULT '',
    FOREIGN KEY (endpoint, event_id) REFERENCES webhook_deliveries (endpoint, event_id) ON DELETE CASCADE
);

CREATE INDEX webhook_attempts_recent ON webhook_attempts (endpoint, attempted_at DESC);
CREATE INDEX webhook_attempts_of_event ON webhook_attempts (endpoint, event_id);

GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints, webhook_deliveries, webhook_attempts TO ledger_service;
