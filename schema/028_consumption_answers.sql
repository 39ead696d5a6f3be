-- Answers to Apple's CONSUMPTION_REQUEST (issue 44): a customer asked Apple for a refund, and Apple asks the developer,
-- within 12 hours, what it knows (Send Consumption Information). The requests are the `provider_messages` rows of
-- effect `consumption_request`; the ledger answers each once, by the operator's policy (off by default), and keeps
-- here every answer it sent and every attempt's outcome (Sources/LedgerPostgres/Recovery/RecoverySchedule+Consumption.swift).
-- A node answering holds the request until `leased_until`. Every time comes from the caller's clock.
CREATE TABLE consumption_answers (
    notification_id text PRIMARY KEY,
    transaction_id  text NOT NULL,
    requested_at    timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    -- NULL once answered, or once Apple's 12 hours have passed (or it refused the answer for good).
    next_attempt_at timestamptz,
    lease           uuid,
    leased_until    timestamptz,
    -- What was sent (the request body), when Apple accepted it (202), and in which environment.
    body            jsonb,
    sent_at         timestamptz,
    environment     text,
    last_outcome    text,
    last_said       text
);

-- "Which consumption requests are still within Apple's 12 hours?"
CREATE INDEX provider_messages_consumption_requests ON provider_messages (signed_at)
    WHERE provider = 'app_store' AND effect = 'consumption_request';

GRANT SELECT, INSERT, UPDATE ON consumption_answers TO ledger_service;
