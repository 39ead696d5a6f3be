-- Subscriptions (issue 44): the second kind of stream (`kind = 'subscription'`), one per provider subscription, its
-- id the provider's `originalTransactionId` (docs/domain.md, "Subscriptions"). Its projections are written by the
-- append, in the statement that writes its events (Sources/LedgerPostgres/Subscriptions/SubscriptionProjection.swift).

-- One row per subscription: who owns it, and its signed facts as the fold keeps them (`facts`: every transaction as
-- last signed, every renewal info, the notifications recorded). Whether it entitles at a moment is derived from the
-- facts when asked: one row read, and no stored "entitled" flag that goes stale as time passes.
CREATE TABLE subscriptions (
    subscription_id text PRIMARY KEY,
    account_id      text,
    order_id        text,
    facts           jsonb NOT NULL,
    version         integer NOT NULL CHECK (version > 0),
    updated_at      timestamptz NOT NULL,
    CHECK ((account_id IS NULL) = (order_id IS NULL))
);
-- "Which subscriptions entitle this account?"
CREATE INDEX subscriptions_by_account ON subscriptions (account_id) WHERE account_id IS NOT NULL;

-- Every transaction of a subscription (its first purchase, each renewal), bound to one subscription, once, across the
-- ledger: its primary key decides a race between two subscriptions claiming one transaction (the append's check
-- aborts the loser, schema/008).
CREATE TABLE subscription_transactions (
    transaction_id  text PRIMARY KEY,
    subscription_id text NOT NULL,
    product_id      text NOT NULL,
    purchased_at    timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    revoked_at      timestamptz
);
CREATE INDEX subscription_transactions_by_subscription ON subscription_transactions (subscription_id);

GRANT SELECT, INSERT, UPDATE ON subscriptions, subscription_transactions TO ledger_service;
