-- The periods the backend credited (issue 44): `subscription.granted` records when, and the append writes it on the
-- period's row. Finance lists a renewal never credited (`renewal_not_credited`) and a credit made after its period
-- had ended (`access_after_expiry`) from these rows.
ALTER TABLE subscription_transactions ADD COLUMN granted_at timestamptz;

-- "Which paid periods has the backend not credited?", oldest first (the anomaly's pages).
CREATE INDEX subscription_transactions_not_granted ON subscription_transactions (purchased_at, transaction_id)
    WHERE granted_at IS NULL AND revoked_at IS NULL;
