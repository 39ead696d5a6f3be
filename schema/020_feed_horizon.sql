-- The feed's horizon (Sources/LedgerPostgres/Store/EventStore+Read.swift, readAll): the feed returns only events whose
-- writing transaction is below it, so that no event can later appear behind a reader's cursor. It was the oldest
-- transaction running anywhere in the cluster (`pg_snapshot_xmin`): one write transaction left open in another
-- database, a long import or a session idle in transaction held the feed back for as long (11.3 s measured; 60 s
-- when held 60 s). It is now the oldest transaction, of those running in `snapshot` (the reading statement's own),
-- that may still add an event the snapshot does not see:
--   - one that holds a lock on `events` that lets it insert (RowExclusiveLock or stronger) — an append: every
--     statement that inserts events names `events`, so it holds that lock from before its transaction has an id
--     (PostgreSQL locks a statement's tables before it runs, and gives a transaction its id at its first write) until
--     the transaction ends;
--   - one that has ended since the snapshot: what it wrote is not in the snapshot, whatever it was.
-- The locks are read before the transactions' status: a transaction that ended between the two reads is then found
-- ended. A transaction running with an id and no such lock never inserts an event (the ledger's appends each insert
-- in the statement that gives their transaction its id) and is passed over. Below the horizon every transaction in
-- the snapshot has ended; at or above it come those that have not, and every later one.
-- On a standby the primary's locks are not visible: the horizon stays the snapshot's oldest running transaction.
CREATE FUNCTION feed_horizon(snapshot pg_snapshot) RETURNS xid8 LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    appending xid[];
    horizon xid8;
BEGIN
    IF pg_is_in_recovery() THEN
        RETURN pg_snapshot_xmin(snapshot);
    END IF;
    -- Every lock a transaction holds on its own id names the id: those of the backends holding `events` so.
    WITH locks AS MATERIALIZED (SELECT locktype, database, relation, transactionid, pid, mode, granted FROM pg_locks)
    SELECT array_agg(own.transactionid) INTO appending
    FROM locks own
    WHERE own.locktype = 'transactionid' AND own.mode = 'ExclusiveLock' AND own.granted
      AND own.pid IN (
          SELECT pid FROM locks
          WHERE locktype = 'relation' AND granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND relation = 'events'::regclass
            AND mode IN ('RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock'));
    SELECT min(running) INTO horizon
    FROM pg_snapshot_xip(snapshot) AS running
    WHERE running::xid = ANY (coalesce(appending, '{}')) OR pg_xact_status(running) IS DISTINCT FROM 'in progress';
    RETURN coalesce(horizon, pg_snapshot_xmax(snapshot));
END $$;
