-- Inline projections: written in the same transaction as the events they fold.

-- One row per order: the fold of its events (LedgerCore.OrderDecider.fold), nothing more.
CREATE TABLE orders (
    order_id              text PRIMARY KEY,
    account_id            text NOT NULL,
    product_id            text NOT NULL,
    quantity              integer NOT NULL,
    amount_value          bigint NOT NULL,
    currency              text NOT NULL,
    provider              text NOT NULL,
    environment           text NOT NULL,
    app_account_token     uuid,
    state                 text NOT NULL,
    version               integer NOT NULL,
    transaction_id        text,
    flags                 text[] NOT NULL DEFAULT '{}',
    verification_attempts integer NOT NULL DEFAULT 0,
    last_error_code       text,
    refunded_value        bigint,
    refunded_currency     text,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    granted_at            timestamptz,
    finished_at           timestamptz,
    refunded_at           timestamptz
);

CREATE INDEX orders_by_account     ON orders (account_id, order_id);
CREATE INDEX orders_by_state_age   ON orders (state, updated_at);
CREATE INDEX orders_by_transaction ON orders (transaction_id) WHERE transaction_id IS NOT NULL;
CREATE INDEX orders_by_granted     ON orders (granted_at) WHERE granted_at IS NOT NULL;
CREATE INDEX orders_by_refunded    ON orders (refunded_at) WHERE refunded_at IS NOT NULL;

-- A provider transactionId belongs to at most one order. The primary key is the guard that decides
-- races between orders: the loser's append finds the row taken and is refused.
CREATE TABLE order_transactions (
    transaction_id text PRIMARY KEY,
    order_id       text NOT NULL,
    account_id     text NOT NULL,
    granted_at     timestamptz,
    finished_at    timestamptz,
    refunded_at    timestamptz
);
