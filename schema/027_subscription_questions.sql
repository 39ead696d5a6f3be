-- Recovery of subscriptions (issue 44): when a subscription's last known period has ended and nothing since was heard
-- (a renewal, a billing failure, an expiry), the ledger asks Apple (Get All Subscription Statuses, then the
-- transaction history for the periods it missed) and records the signed answer (`subscription.answered`).
-- Sources/LedgerPostgres/Recovery/SubscriptionQuestions.swift keeps these rows; the plan is RecoveryPlan's.
--
-- `period_ends_at`: when the last period the ledger knows of ends (the latest `expires_at` of its transactions),
-- written by the append with the rest of the row; the schedule's question is "which ended a while ago?".
ALTER TABLE subscriptions ADD COLUMN period_ends_at timestamptz;
UPDATE subscriptions s SET period_ends_at = (
    SELECT max(t.expires_at) FROM subscription_transactions t WHERE t.subscription_id = s.subscription_id);
CREATE INDEX subscriptions_by_period_end ON subscriptions (period_ends_at) WHERE period_ends_at IS NOT NULL;

-- One row per subscription ever asked about: the period whose sequel is asked (`period_ends_at`: a new period ends
-- the question, and a later end begins a new one), when to ask again, and what the last question came to. A node
-- asking holds it until `leased_until` (a node killed mid-question frees it then). `settled`: Apple said the
-- subscription ended (expired, revoked), or refused the question for good; nothing is asked until a later period ends.
-- Every time comes from the caller's clock (tests inject one), never from now().
CREATE TABLE subscription_questions (
    subscription_id text PRIMARY KEY,
    period_ends_at  timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_ask_at     timestamptz NOT NULL,
    settled         boolean NOT NULL DEFAULT false,
    lease           uuid,
    leased_until    timestamptz,
    last_asked_at   timestamptz,
    last_outcome    text,
    last_said       text
);

GRANT SELECT, INSERT, UPDATE ON subscription_questions TO ledger_service;
