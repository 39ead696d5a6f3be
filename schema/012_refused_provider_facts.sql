-- A provider's verified message whose fact the event rules refuse (a transaction id outside the id alphabet, a
-- currency in lower case, an amount past the bound): the message is kept here, verbatim in `unmatched_data`, never
-- as an event its order could not read back. `refused` names the field and the rule; finance lists these rows as
-- `refused_provider_message`. `named_order_id` holds the order the message was about, if one matched.
ALTER TABLE provider_messages ADD COLUMN refused text;

-- (schema/010 names a ProviderInbox.swift: the messages are recorded by Sources/LedgerPostgres/Ledger/
-- Ledger+ProviderMessages.swift. An applied migration is never edited, so the correction is made here.)
