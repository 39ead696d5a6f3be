-- The recovery schedule (补单): the orders the ledger asks their provider about until it answers
-- (Sources/LedgerPostgres/Recovery/, the plan in Sources/LedgerCore/Recovery/RecoveryPlan.swift). One row per order
-- ever asked about. Every time in these tables comes from the caller's clock (tests inject one), never from now().
CREATE TABLE recovery_schedule (
    order_id        text PRIMARY KEY,
    provider        text NOT NULL,
    reason          text NOT NULL CHECK (reason IN ('receipt_unverified', 'verification_retryable', 'payment_unanswered', 'asked')),
    status          text NOT NULL CHECK (status IN ('pending', 'recovered', 'settled', 'unrecoverable')),
    entered_at      timestamptz NOT NULL,
    -- The order's version when the row last changed: an order that ended here enters again only once it has moved.
    order_version   integer NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    -- A node asking about the order holds it until `leased_until`; a node killed mid-attempt frees it then.
    lease           uuid,
    leased_until    timestamptz,
    last_attempt_at timestamptz,
    last_outcome    text,
    last_said       text,
    ended_at        timestamptz
);

-- The worker's question: which pending orders are due.
CREATE INDEX recovery_schedule_due ON recovery_schedule (next_attempt_at) WHERE status = 'pending';
-- Finance's: which ended unrecoverable.
CREATE INDEX recovery_schedule_unrecoverable ON recovery_schedule (ended_at, order_id) WHERE status = 'unrecoverable';

-- Every question asked, and what came of it: what was asked, what the provider answered (its own words when it
-- gave any), what was recorded. Not order events: "not paid yet" and errors are facts about the asking.
CREATE TABLE recovery_attempts (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id       text NOT NULL,
    attempt        integer NOT NULL,
    provider       text NOT NULL,
    asked_by       text NOT NULL,
    asked_at       timestamptz NOT NULL,
    duration_ms    integer NOT NULL,
    outcome        text NOT NULL CHECK (outcome IN ('recovered', 'not_yet', 'not_askable', 'unverified', 'unreachable', 'configuration', 'kept_not_applied')),
    said           text NOT NULL,
    provider_words text,
    recorded       text[] NOT NULL DEFAULT '{}'
);

CREATE INDEX recovery_attempts_by_order ON recovery_attempts (order_id, id);

-- Sweeps of a provider's own record of the notifications it failed to deliver (Apple's notification history): how
-- far each has been swept, and which node is sweeping it now (a lease, as an order's).
CREATE TABLE recovery_sweeps (
    source       text PRIMARY KEY,
    swept_until  timestamptz NOT NULL,
    lease        uuid,
    leased_until timestamptz
);

GRANT SELECT, INSERT, UPDATE ON recovery_schedule TO ledger_service;
GRANT SELECT, INSERT ON recovery_attempts TO ledger_service;
GRANT SELECT, INSERT, UPDATE ON recovery_sweeps TO ledger_service;
