-- Subscription revenue (issue 44): what finance reports per day, product and currency — active subscriptions, MRR,
-- renewals, refunds, churn — read from `subscription_transactions` alone, one indexed row per period, never by
-- parsing each subscription's facts. The append writes these columns with the rest of the row
-- (Sources/LedgerPostgres/Subscriptions/SubscriptionRows.swift), from the signed transaction:
--   environment       `production` or `sandbox` (the report counts production only);
--   price_value, currency   the price in minor units (NULL: none stated, or not whole minor units — listed apart);
--   family_shared     a family member's access: entitles, never revenue;
--   periods_per_year  52, 12, 6, 4, 2 or 1: the nearest of Apple's durations (`SubscriptionTransaction.periodsPerYear`);
--   refunded_value    what a refund gave back: the price, or a prorated refund's part rounded half up
--                     (`SubscriptionTransaction.refunded`); NULL when not refunded.
ALTER TABLE subscription_transactions
    ADD COLUMN environment      text,
    ADD COLUMN price_value      bigint,
    ADD COLUMN currency         text,
    ADD COLUMN family_shared    boolean NOT NULL DEFAULT false,
    ADD COLUMN periods_per_year integer,
    ADD COLUMN refunded_value   bigint;

-- The rows written before this migration, from the facts their subscription keeps (the same rules as the Swift
-- above, written once here for the rows that exist now).
UPDATE subscription_transactions t
SET environment = f->>'environment',
    price_value = (f->'price'->>'value')::bigint,
    currency = f->'price'->>'currency',
    family_shared = coalesce((f->>'familyShared')::boolean, false),
    periods_per_year = CASE
        WHEN extract(epoch FROM (f->>'expiresAt')::timestamptz - (f->>'purchasedAt')::timestamptz) / 86400 < 10 THEN 52
        WHEN extract(epoch FROM (f->>'expiresAt')::timestamptz - (f->>'purchasedAt')::timestamptz) / 86400 < 45 THEN 12
        WHEN extract(epoch FROM (f->>'expiresAt')::timestamptz - (f->>'purchasedAt')::timestamptz) / 86400 < 75 THEN 6
        WHEN extract(epoch FROM (f->>'expiresAt')::timestamptz - (f->>'purchasedAt')::timestamptz) / 86400 < 135 THEN 4
        WHEN extract(epoch FROM (f->>'expiresAt')::timestamptz - (f->>'purchasedAt')::timestamptz) / 86400 < 270 THEN 2
        ELSE 1 END,
    refunded_value = CASE
        WHEN f->'price' IS NULL OR f->'revocation' IS NULL OR f->'revocation'->>'kind' NOT IN ('refund_full', 'refund_prorated') THEN NULL
        WHEN f->'revocation'->>'kind' = 'refund_prorated' AND f->'revocation'->'percentage' IS NOT NULL
            THEN floor((f->'price'->>'value')::numeric * (f->'revocation'->>'percentage')::numeric / 100000 + 0.5)::bigint
        ELSE (f->'price'->>'value')::bigint END
FROM subscriptions s, jsonb_array_elements(s.facts->'transactions') f
WHERE s.subscription_id = t.subscription_id AND f->>'transactionId' = t.transaction_id;

ALTER TABLE subscription_transactions
    ALTER COLUMN environment SET NOT NULL,
    ALTER COLUMN periods_per_year SET NOT NULL;
