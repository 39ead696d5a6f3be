-- The purchases an older app's receipt lists beside the one its order was given (Sources/LedgerHTTP/
-- LegacyReceipts.swift, Sources/LedgerCore/ReceiptPurchaseChoice.swift). Such a receipt lists every purchase the app
-- has not finished; each order takes its own, and the others are kept on the `receipt.received` event
-- (`data.otherPurchases`) and here, one row per transaction (the first receipt that listed it), written by the
-- trigger below in the event's transaction. Finance lists those no order holds (`order_transactions`) as
-- `unclaimed_purchase`: paid, per the receipt, and not credited — never dropped; once an order takes one it is no
-- longer listed, and the primary key of `order_transactions` still lets only one order take it. Not facts Apple
-- signed: the receipt's signature is not checked, so each is a question for Apple (`ledger recover`), not revenue.
CREATE TABLE receipt_purchases (
    transaction_id          text PRIMARY KEY,
    original_transaction_id text NOT NULL,
    product_id              text NOT NULL,
    purchased_at            timestamptz,
    -- The order whose receipt listed it, the receipt's SHA-256 and when it was recorded.
    order_id                text NOT NULL,
    receipt_sha256          text,
    recorded_at             timestamptz NOT NULL
);

CREATE INDEX receipt_purchases_by_time ON receipt_purchases (recorded_at, transaction_id);

CREATE FUNCTION receipt_purchases_index_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO receipt_purchases (transaction_id, original_transaction_id, product_id, purchased_at, order_id,
                                   receipt_sha256, recorded_at)
    SELECT p->>'transactionId', p->>'originalTransactionId', p->>'productId', (p->>'purchasedAt')::timestamptz,
           NEW.order_id, NEW.data->>'receiptSha256', NEW.recorded_at
    FROM jsonb_array_elements(NEW.data->'otherPurchases') AS p
    ON CONFLICT (transaction_id) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_index_receipt_purchases
    AFTER INSERT ON events FOR EACH ROW WHEN (NEW.type = 'receipt.received' AND NEW.data ? 'otherPurchases')
    EXECUTE FUNCTION receipt_purchases_index_event();

GRANT SELECT, INSERT ON receipt_purchases TO ledger_service;
