-- A subscription owned without an order of the ledger's (issue 44): an account that claims one of its signed
-- transactions while nobody owns it (`subscription.claimed`: a restore, a family member, a purchase made outside the
-- app) owns it with no order. A linked subscription keeps its order, a transferred one too (the first purchase's).
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_check;
ALTER TABLE subscriptions ADD CHECK (order_id IS NULL OR account_id IS NOT NULL);

-- A subscription's refused claim is kept in the refusal log under the subscription's id: there `order_id` holds the
-- stream's id and `event_type` (`subscription.claimed`) its kind.
COMMENT ON COLUMN refusals.order_id IS 'the refused event''s stream: an order''s id, or a subscription''s for event types subscription.*';
