-- Streams of several kinds (issue 43). The order was the only kind of stream, and `streams` and `events` were keyed by
-- `order_id`; a subscription will be the second kind. A stream is now named by its kind and its id, and every event
-- carries its stream's kind. What was stored keeps its meaning: every existing row is an order's (kind 'order', its
-- order id now the stream id), and an order event's canonical bytes still name it `orderId`
-- (LedgerCore/Audit/EventSeal.swift), so its hash, its chain and a digest saved before this migration are unchanged.

-- The kinds are LedgerCore's (`StreamKind`); here only their spelling is checked. No default after the existing rows
-- are filled: every writer names the kind it writes.
ALTER TABLE streams RENAME COLUMN order_id TO stream_id;
ALTER TABLE streams ADD COLUMN kind text NOT NULL DEFAULT 'order' CHECK (kind ~ '^[a-z][a-z_]{0,30}$');
ALTER TABLE streams ALTER COLUMN kind DROP DEFAULT;
ALTER TABLE streams DROP CONSTRAINT streams_pkey, ADD PRIMARY KEY (kind, stream_id);

ALTER TABLE events RENAME COLUMN order_id TO stream_id;
ALTER TABLE events ADD COLUMN kind text NOT NULL DEFAULT 'order';
ALTER TABLE events ALTER COLUMN kind DROP DEFAULT;
-- A stream's versions, 1, 2, 3… without gaps; also the index every stream read and the rebuild's scan of a kind use.
ALTER TABLE events DROP CONSTRAINT events_order_id_version_key,
    ADD CONSTRAINT events_stream_version UNIQUE (kind, stream_id, version);

-- The indexes that order events feed (provider messages, a receipt's other purchases): only an order's events.
CREATE OR REPLACE FUNCTION provider_messages_index_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO provider_messages (provider, notification_id, order_id, effect, notification_type, transaction_id,
                                   amount_value, currency, signed_at, recorded_at)
    VALUES (NEW.data->>'provider', NEW.data->>'notificationId', NEW.stream_id, NEW.data->>'effect',
            NEW.data->>'notificationType', NEW.data->>'transactionId', (NEW.data->'amount'->>'value')::bigint,
            NEW.data->'amount'->>'currency', (NEW.data->>'signedAt')::timestamptz, NEW.recorded_at)
    ON CONFLICT (provider, notification_id) DO NOTHING;
    RETURN NULL;
END
$$;

DROP TRIGGER events_index_provider_messages ON events;
CREATE TRIGGER events_index_provider_messages
    AFTER INSERT ON events FOR EACH ROW WHEN (NEW.kind = 'order' AND NEW.type = 'provider.notified')
    EXECUTE FUNCTION provider_messages_index_event();

CREATE OR REPLACE FUNCTION receipt_purchases_index_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO receipt_purchases (transaction_id, original_transaction_id, product_id, purchased_at, order_id,
                                   receipt_sha256, recorded_at)
    SELECT p->>'transactionId', p->>'originalTransactionId', p->>'productId', (p->>'purchasedAt')::timestamptz,
           NEW.stream_id, NEW.data->>'receiptSha256', NEW.recorded_at
    FROM jsonb_array_elements(NEW.data->'otherPurchases') AS p
    ON CONFLICT (transaction_id) DO NOTHING;
    RETURN NULL;
END
$$;

DROP TRIGGER events_index_receipt_purchases ON events;
CREATE TRIGGER events_index_receipt_purchases
    AFTER INSERT ON events
    FOR EACH ROW WHEN (NEW.kind = 'order' AND NEW.type = 'receipt.received' AND NEW.data ? 'otherPurchases')
    EXECUTE FUNCTION receipt_purchases_index_event();
