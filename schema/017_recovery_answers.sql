-- Every answer a provider gave when asked about a lost order, kept verbatim (issue 42, item 12): the body as it came
-- and the headers that sign it (WeChat Pay's `Wechatpay-*`), with `verified` saying whether its signature was
-- checked on arrival — a "not yet" (NOTPAY, ACQ.TRADE_NOT_EXIST), a refusal, and an answer that failed verification
-- alike. Before, a "not yet" was kept as 4 KiB of text without the headers that sign it, and an answer that failed
-- verification not at all: an auditor could not check why the ledger waited. `ledger verify --signatures` checks the
-- verified ones again. Written by the same insert as the attempt; never changed.
ALTER TABLE recovery_attempts ADD COLUMN answer jsonb;

-- `refused`: the provider refused the question for good (Apple's 4000006, an invalid transaction id; 4040001, no
-- such account): the order is unrecoverable at once, where it had been asked again for 24 hours.
ALTER TABLE recovery_attempts DROP CONSTRAINT recovery_attempts_outcome_check;
ALTER TABLE recovery_attempts ADD CONSTRAINT recovery_attempts_outcome_check CHECK (outcome IN (
    'recovered', 'recorded_not_applied', 'not_yet', 'not_askable', 'unverified', 'unreachable', 'configuration',
    'kept_not_applied', 'refused'));
