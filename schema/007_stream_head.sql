-- The hash of each order's last event, kept on the stream row that appends lock.
--
-- Why: the append used to read the previous hash with a subquery of the statement that locks the stream row
-- (INSERT … ON CONFLICT DO UPDATE … RETURNING (SELECT hash FROM events …)). Under READ COMMITTED a statement reads
-- with the snapshot taken when it started; when it had to wait for the lock, ON CONFLICT updated the newest row
-- version (so versions stayed gapless) but the subquery still read `events` as of before the wait, missed the
-- event the lock holder had just committed, and the new event was chained onto nothing. Reading the hash from the
-- locked row itself is always current: the row version ON CONFLICT locks is the one RETURNING reads.
ALTER TABLE streams ADD COLUMN last_hash bytea;

-- Streams recorded before this migration: their last event's hash, as stored (a chain broken by the old race stays
-- broken in `ledger verify`; new events chain onto what is stored, so nothing after it is reported as well).
UPDATE streams s SET last_hash = e.hash FROM events e WHERE e.order_id = s.order_id AND e.version = s.version;
