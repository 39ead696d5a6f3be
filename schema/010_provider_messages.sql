-- The payment providers' verified messages (Sources/LedgerPostgres/Providers/ProviderInbox.swift).
-- One row per message, whether or not an order matched it: the idempotency key of a provider's retries
-- (Apple's notificationUUID, Alipay's notify_id, WeChat Pay's id), and what finance's provider-side anomalies read.
-- A matched message is an event on its order's stream (`provider.notified`, the evidence inside); its row here is
-- written by the trigger below, in the same transaction. An unmatched message has no stream: its row is all there
-- is, so it keeps the fact whole (`unmatched_data`) — kept, never dropped: paid at the provider, no order here.
CREATE TABLE provider_messages (
    provider        text NOT NULL,
    notification_id text NOT NULL,
    order_id        text,
    -- The order id the message named, if it named one (out_trade_no) that is not in the ledger.
    named_order_id  text,
    effect          text NOT NULL,
    notification_type text NOT NULL,
    transaction_id  text,
    amount_value    bigint,
    currency        text,
    signed_at       timestamptz NOT NULL,
    recorded_at     timestamptz NOT NULL,
    unmatched_data  jsonb,
    PRIMARY KEY (provider, notification_id),
    CHECK ((order_id IS NULL) = (unmatched_data IS NOT NULL))
);

CREATE INDEX provider_messages_by_order ON provider_messages (order_id, effect) WHERE order_id IS NOT NULL;
CREATE INDEX provider_messages_unmatched ON provider_messages (recorded_at) WHERE order_id IS NULL;

CREATE FUNCTION provider_messages_index_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO provider_messages (provider, notification_id, order_id, effect, notification_type, transaction_id,
                                   amount_value, currency, signed_at, recorded_at)
    VALUES (NEW.data->>'provider', NEW.data->>'notificationId', NEW.order_id, NEW.data->>'effect',
            NEW.data->>'notificationType', NEW.data->>'transactionId', (NEW.data->'amount'->>'value')::bigint,
            NEW.data->'amount'->>'currency', (NEW.data->>'signedAt')::timestamptz, NEW.recorded_at)
    ON CONFLICT (provider, notification_id) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_index_provider_messages
    AFTER INSERT ON events FOR EACH ROW WHEN (NEW.type = 'provider.notified')
    EXECUTE FUNCTION provider_messages_index_event();

-- A notification finds its App Store order by the appAccountToken the app set at purchase.
CREATE INDEX orders_by_app_account_token ON orders (app_account_token) WHERE app_account_token IS NOT NULL;

CREATE OR REPLACE FUNCTION ledger_grant_service_privileges() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    GRANT SELECT, INSERT ON events, refusals, ledger_digests, provider_messages TO ledger_service;
    -- Upserts (the stream's version, the projections) need UPDATE; nothing needs DELETE.
    GRANT SELECT, INSERT, UPDATE ON streams, orders, order_transactions TO ledger_service;
    -- Authentication reads tokens and their epoch; creating and revoking them is the operator's (`ledger tokens`).
    GRANT SELECT ON api_tokens, api_token_epoch, schema_migrations TO ledger_service;
END
$$;

SELECT ledger_grant_service_privileges();
