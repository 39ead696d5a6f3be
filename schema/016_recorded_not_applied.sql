-- An attempt whose verified answer was recorded on the order but did not move it out of the states that may be lost
-- (Alipay's WAIT_BUYER_PAY, a payment for another amount, product or environment): `recorded_not_applied`. Such an
-- attempt had ended the schedule as `recovered`, and an order paid later was never asked again. It does not end the
-- schedule (Sources/LedgerCore/Recovery/RecoveryPlan.swift).
ALTER TABLE recovery_attempts DROP CONSTRAINT recovery_attempts_outcome_check;
ALTER TABLE recovery_attempts ADD CONSTRAINT recovery_attempts_outcome_check CHECK (outcome IN (
    'recovered', 'recorded_not_applied', 'not_yet', 'not_askable', 'unverified', 'unreachable', 'configuration',
    'kept_not_applied'));
