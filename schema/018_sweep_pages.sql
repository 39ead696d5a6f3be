-- A sweep of a provider's notification history keeps its place inside a window (Sources/LedgerRecovery/
-- AppStoreNotificationSweep.swift). After an outage of several days Apple's history of failed notifications holds
-- more pages than one round reads (AppStoreServerAPI.maximumPages); the sweep kept only `swept_until`, so every round
-- started the same window from its first page again, never finished it, and asked Apple hundreds of times a minute.
-- Now the window being swept (Apple ties a `paginationToken` to the exact request it was given for) and the token of
-- its next unread page are written after each page is recorded: the next round, on any node, goes on from there, and
-- `swept_until` moves to the window's end when its last page is read.
ALTER TABLE recovery_sweeps
    ADD COLUMN window_start timestamptz,
    ADD COLUMN window_end   timestamptz,
    ADD COLUMN page_token   text,
    ADD CONSTRAINT recovery_sweeps_window CHECK ((window_start IS NULL) = (window_end IS NULL) AND (page_token IS NULL OR window_start IS NOT NULL));
