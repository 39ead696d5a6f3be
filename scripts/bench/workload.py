"""The benchmark's workload, in one place: the 6-event order lifecycle posted to the service, and the pgbench
scripts that issue the SQL the service issues for the same work (raw baseline).

The SQL below mirrors, statement for statement, what one HTTP request costs the database (the service's normal,
uncontended path, with the request's token already cached):
- no token lookup: `TokenCache` keeps authenticated tokens in memory, and the statements below read the token epoch
  (`(SELECT epoch FROM api_token_epoch)`, schema/009) that confirms a cached token;
- an append (`EventStore.append`) is one statement, no BEGIN/COMMIT, on the path every append of this workload
  takes: the node remembers the order it wrote last, and a batch that creates its order needs nothing remembered
  (`RecentStreams`), so the read is skipped and `AppendStatements.write` runs alone: one statement of
  data-modifying CTEs: admitted (the cached token's epoch and the recorded time against the database's clock),
  head (stream row `FOR UPDATE NOWAIT`, gated on the version remembered), moved (stream version and last hash) or
  created (a new stream), won, appended (unnest … WITH ORDINALITY), projected (the orders upsert,
  `OrderRows.upsertOrderSQL`/`upsertOrderConflictSQL`), bound (the order_transactions upsert), and a final SELECT
  through `ledger_append_requires` (schema/008). (Before stop 34 the read, `AppendStatements.readQuery`, came first.)
  Since stop 38 the service writes such appends in groups (`AppendGroup`, `AppendStatements.groupWriteQuery`): one
  statement for every append waiting while the group before was written. Raw still replays one write per append,
  so it is what an append costs written alone, and the service may beat it.
- a history page (`EventStore.readPage`, the route's default page of 100, read as 101 to know whether another
  follows): one SELECT of the order's events after version 0 with the token epoch, `LIMIT 101`.
The order id is a bind parameter, as in the service; the other values the service binds are literals here, with
stand-ins for what only the service computes (canonical bytes, hashes; `now()` for the database's clock as the node
estimates it, which the service binds as the events' recorded_at and the order's times). pgbench runs them prepared
(`-M prepared`, bench.py's default since stop 47): named, parsed and planned once per connection, as the service runs
its hot statements (`plan_cache_mode = force_generic_plan`). `BENCH_PGBENCH_MODE=extended` gives the method before:
unnamed statements parsed and planned on every call, more work than the service does.
"""

import json
import uuid

# The lifecycle of README's curl walkthrough: (type, data, order state after it, names a transactionId?)
LIFECYCLE_TYPES = ["order.created", "payment.queued", "receipt.received", "receipt.verified", "order.granted", "order.finished"]
STATES = ["created", "payment_queued", "receipt_received", "verified", "granted", "finished"]
NAMES_TRANSACTION = [False, False, True, True, True, False]


def event_data(step, transaction_id):
    """The data of lifecycle event `step` (0…5) for an order whose provider transaction is `transaction_id`."""
    return [
        {"accountId": "acct-42", "amount": {"currency": "USD", "value": 499}, "productId": "gems.100", "provider": "app_store"},
        {"applicationUsername": "acct-42"},
        {"receipt": "MIIT...", "transactionId": transaction_id},
        {"environment": "production", "productId": "gems.100", "purchasedAt": "2026-11-22T10:00:00Z",
         "transactionId": transaction_id},
        {"accountId": "acct-42", "items": {"gems": 100}, "transactionId": transaction_id},
        {},
    ][step]


def http_event(step, order_id):
    """One lifecycle event as posted to POST /v1/orders/{id}/events (fresh eventId; transactionId unique per order)."""
    return {"eventId": str(uuid.uuid4()), "type": LIFECYCLE_TYPES[step], "data": event_data(step, "t-" + order_id)}


def http_single_body(step, order_id):
    return json.dumps(http_event(step, order_id), separators=(",", ":")).encode()


def http_batch_body(order_id):
    return json.dumps({"expectedVersion": 0, "events": [http_event(s, order_id) for s in range(6)]},
                      separators=(",", ":")).encode()


# ---------------------------------------------------------------------------------------------------------------
# pgbench scripts. Variables: :run (run tag), :phase (distinct per pgbench run: order ids never repeat), :n (per-client
# counter, starts at 0 with -D n=0; pgbench keeps a client's variables from one transaction to the next), :horders.
# (:tokhash, the hex SHA-256 of the bench token, is still passed by bench.py but no longer used: no token lookup.)

# OrderRows.orderColumns, in its order.
ORDER_COLUMNS = ("order_id, account_id, product_id, quantity, amount_value, currency, provider, environment, "
                 "app_account_token, state, version, transaction_id, flags, verification_attempts, last_error_code, "
                 "refunded_value, refunded_currency, created_at, updated_at, granted_at, finished_at, refunded_at")
# OrderRows.orderColumnsOfO: the same, qualified by the read's `orders o`.

# OrderRows.upsertOrderConflictSQL
UPSERT_ORDER_CONFLICT = (
    "ON CONFLICT (order_id) DO UPDATE SET\n"
    "    account_id = EXCLUDED.account_id, product_id = EXCLUDED.product_id, quantity = EXCLUDED.quantity,\n"
    "    amount_value = EXCLUDED.amount_value, currency = EXCLUDED.currency, provider = EXCLUDED.provider,\n"
    "    environment = EXCLUDED.environment, app_account_token = EXCLUDED.app_account_token, state = EXCLUDED.state,\n"
    "    version = EXCLUDED.version, transaction_id = EXCLUDED.transaction_id, flags = EXCLUDED.flags,\n"
    "    verification_attempts = EXCLUDED.verification_attempts, last_error_code = EXCLUDED.last_error_code,\n"
    "    refunded_value = EXCLUDED.refunded_value, refunded_currency = EXCLUDED.refunded_currency,\n"
    "    created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, granted_at = EXCLUDED.granted_at,\n"
    "    finished_at = EXCLUDED.finished_at, refunded_at = EXCLUDED.refunded_at")

# EventStore.columns
EVENT_COLUMNS = "position, kind, stream_id, version, event_id, type, data::text, metadata::text, occurred_at, recorded_at"

# OrderRoutes.defaultHistoryPage; Ledger.history reads one more, to know whether another page follows.
HISTORY_PAGE = 100

OID = "('p' || :oid::text)"          # the order id, one bind parameter like the service's
TXID = "('t-p' || :oid::text)"      # its provider transactionId
CANONICAL = "'\\x" + ("7b22" * 110) + "'::bytea"   # stand-in canonical bytes (~220 bytes, as the service's)
HASH = "'\\x" + ("ab" * 32) + "'::bytea"           # stand-in SHA-256


def sql_text(value):
    return "'" + value.replace("'", "''") + "'"


def metadata_json():
    return json.dumps({"actor": "bench", "requestId": "00000000-0000-4000-8000-000000000000"}, separators=(",", ":"))


def event_id(version):
    return f"md5({OID} || '/{version}')::uuid"


def sql_bool(value):
    return "true" if value else "false"


class Append:
    """The values one append of lifecycle events `steps` (consecutive, after version first_version - 1) binds."""

    def __init__(self, steps, first_version):
        self.steps, self.count = steps, len(steps)
        self.previous = first_version - 1                 # snapshot.version
        self.new_version = self.previous + self.count
        self.stream_exists = self.previous > 0            # snapshot.streamExists (the lifecycle starts a new stream)
        self.ids = ", ".join(event_id(first_version + i) for i in range(self.count))
        self.types = ", ".join(sql_text(LIFECYCLE_TYPES[s]) for s in steps)
        # The data's canonical JSON (sorted keys); the transactionId in it is per order, built in SQL.
        datas = []
        for s in steps:
            data = json.dumps(event_data(s, "@@TX@@"), separators=(",", ":"), sort_keys=True)
            literal = sql_text(data)
            if "@@TX@@" in data:
                left, right = literal.split("@@TX@@")
                literal = f"({left}' || {TXID} || '{right})"
            datas.append(literal)
        self.datas = ", ".join(datas)
        self.metas = ", ".join([sql_text(metadata_json())] * self.count)
        self.occurred = ", ".join(["''"] * self.count)  # no occurredAt posted
        self.canonicals = ", ".join([CANONICAL] * self.count)
        self.hashes = ", ".join([HASH] * self.count)
        # Ledger.record: the transactionIds the events name, one per naming event.
        self.named = ", ".join(TXID for s in steps if NAMES_TRANSACTION[s])
        # The projected order, emulated: state after the last event, transactionId once receipt.received was seen.
        last = steps[-1]
        self.state = STATES[last]
        self.tx = TXID if last >= 2 else "NULL"
        self.granted = "now()" if last >= 4 else "NULL"
        self.finished = "now()" if last >= 5 else "NULL"


def append_write(a):
    """AppendStatements.writeQuery, unqueued (NOWAIT), decided from memory: the append's one statement. The
    admission compares the token epoch with a constant, as the service compares it with its bound one (this database's
    epoch is whatever its token changes made it)."""
    exists = sql_bool(a.stream_exists)
    return (
        f"WITH admitted AS (\n"
        f"    SELECT NOT true\n"
        f"           OR (coalesce((SELECT epoch FROM api_token_epoch) >= 0, true)\n"
        f"               AND now() <= clock_timestamp()\n"
        f"               AND now() > clock_timestamp() - interval '1 seconds')\n"
        f"           AS ok\n"
        f"), head AS (\n"
        f"    SELECT 1 FROM streams\n"
        f"    WHERE kind = 'order' AND stream_id = {OID} AND version = {a.previous} AND {exists}\n"
        f"          AND (SELECT ok FROM admitted)\n"
        f"    FOR UPDATE NOWAIT\n"
        f"), moved AS (\n"
        f"    UPDATE streams SET version = {a.new_version}, last_hash = {HASH}::bytea\n"
        f"    WHERE kind = 'order' AND stream_id = {OID} AND EXISTS (SELECT 1 FROM head)\n"
        f"    RETURNING 1\n"
        f"), created AS (\n"
        f"    INSERT INTO streams (kind, stream_id, version, last_hash)\n"
        f"    SELECT 'order', {OID}, {a.new_version}, {HASH}::bytea\n"
        f"    WHERE NOT {exists} AND (SELECT ok FROM admitted)\n"
        f"    ON CONFLICT (kind, stream_id) DO NOTHING\n"
        f"    RETURNING 1\n"
        f"), won AS (\n"
        f"    SELECT 1 FROM moved UNION ALL SELECT 1 FROM created\n"
        f"), appended AS (\n"
        f"    INSERT INTO events (kind, stream_id, version, event_id, type, data, metadata, occurred_at, recorded_at, canonical, hash)\n"
        f"    SELECT 'order', {OID}, {a.previous} + n.ordinal, n.event_id, n.type, n.data::jsonb,\n"
        f"           n.metadata::jsonb, NULLIF(n.occurred_at, '')::timestamptz, now(),\n"
        f"           n.canonical, n.hash\n"
        f"    FROM unnest(ARRAY[{a.ids}]::uuid[], ARRAY[{a.types}]::text[],\n"
        f"                ARRAY[{a.datas}]::text[], ARRAY[{a.metas}]::text[],\n"
        f"                ARRAY[{a.occurred}]::text[], ARRAY[{a.canonicals}]::bytea[], ARRAY[{a.hashes}]::bytea[])\n"
        f"         WITH ORDINALITY AS n(event_id, type, data, metadata, occurred_at, canonical, hash, ordinal)\n"
        f"    WHERE EXISTS (SELECT 1 FROM won)\n"
        f"    ORDER BY n.ordinal\n"
        f"    RETURNING event_id, version, position\n"
        f"), projected AS (\n"
        f"    INSERT INTO orders ({ORDER_COLUMNS})\n"
        f"    SELECT {OID}::text, 'acct-42'::text, 'gems.100'::text,\n"
        f"           1::int8, 499::int8, 'USD'::text,\n"
        f"           'app_store'::text, 'production'::text,\n"
        f"           NULL::uuid, '{a.state}'::text, {a.new_version}::int8,\n"
        f"           {a.tx}::text, '{{}}'::text[],\n"
        f"           0::int8, NULL::text,\n"
        f"           NULL::int8, NULL::text,\n"
        f"           now()::timestamptz, now()::timestamptz,\n"
        f"           {a.granted}::timestamptz, {a.finished}::timestamptz,\n"
        f"           NULL::timestamptz\n"
        f"    WHERE true AND EXISTS (SELECT 1 FROM won)\n"
        f"    {UPSERT_ORDER_CONFLICT.replace(chr(10), chr(10) + '    ')}\n"
        f"), bound AS (\n"
        f"    INSERT INTO order_transactions AS t (transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)\n"
        f"    SELECT {a.tx}::text, {OID}::text, 'acct-42'::text,\n"
        f"           {a.granted}::timestamptz, {a.finished}::timestamptz,\n"
        f"           NULL::timestamptz\n"
        f"    WHERE {a.tx}::text IS NOT NULL AND EXISTS (SELECT 1 FROM won)\n"
        f"    ON CONFLICT (transaction_id) DO UPDATE SET\n"
        f"        granted_at = EXCLUDED.granted_at, finished_at = EXCLUDED.finished_at, refunded_at = EXCLUDED.refunded_at\n"
        f"        WHERE t.order_id = EXCLUDED.order_id\n"
        f"    RETURNING 1\n"
        f")\n"
        f"SELECT a.event_id, a.version, a.position,\n"
        f"       ledger_append_requires({a.tx}::text IS NULL OR EXISTS (SELECT 1 FROM bound),\n"
        f"                              'transaction ' || {a.tx}::text || ' claimed by another order')\n"
        f"FROM appended a\n"
        f"ORDER BY a.version;\n")


def append_statements(steps, first_version):
    """The statement of one append of lifecycle events `steps` (consecutive), after version first_version - 1: the
    write alone, decided from memory; no BEGIN/COMMIT (EventStore.append's uncontended path)."""
    return append_write(Append(steps, first_version))


def pgbench_single_event():
    """One event per transaction: each client walks its own orders through the lifecycle, event by event."""
    out = ["-- one lifecycle event per transaction (generated by scripts/bench/workload.py)\n",
           "\\set step :n % 6\n",
           "\\set oid ((:run * 100 + :phase) * 1000 + :client_id) * 10000000 + :n / 6\n",
           "\\set n :n + 1\n"]
    for step in range(6):
        out.append(("\\if" if step == 0 else "\\elif") + f" :step = {step}\n")
        out.append(append_statements([step], step + 1))
    out.append("\\endif\n")
    return "".join(out)


def pgbench_batch():
    """A whole lifecycle as one append (expectedVersion 0) to a fresh order."""
    return ("-- one 6-event lifecycle per transaction (generated by scripts/bench/workload.py)\n"
            "\\set oid ((:run * 100 + :phase) * 1000 + :client_id) * 10000000 + :n\n"
            "\\set n :n + 1\n" + append_statements(list(range(6)), 1))


def pgbench_history():
    """GET /v1/orders/h-<k>/history of a random preloaded order: the first page (EventStore.pageQuery, no asOf)."""
    return ("-- one order history page (generated by scripts/bench/workload.py)\n"
            "\\set k random(1, :horders)\n"
            f"SELECT {EVENT_COLUMNS}, (SELECT epoch FROM api_token_epoch) FROM events\n"
            f"WHERE kind = 'order' AND stream_id = ('h-' || :k::text) AND version > 0 ORDER BY version LIMIT {HISTORY_PAGE + 1};\n")


def preload_history_sql(count):
    """For the raw database: `count` finished orders h-1…h-count of 6 events each (stand-in seals)."""
    rows = []
    for step in range(6):
        data = json.dumps(event_data(step, "@@TX@@"), separators=(",", ":"), sort_keys=True)
        rows.append(f"({step + 1}, {sql_text(LIFECYCLE_TYPES[step])}, {sql_text(data)})")
    return (
        "INSERT INTO streams (kind, stream_id, version, last_hash) SELECT 'order', 'h-' || g, 6, %s FROM generate_series(1, %d) g;\n"
        "INSERT INTO events (kind, stream_id, version, event_id, type, data, metadata, recorded_at, canonical, hash)\n"
        "SELECT 'order', 'h-' || g, t.version, gen_random_uuid(), t.type, replace(t.data, '@@TX@@', 't-h-' || g)::jsonb,\n"
        "       %s::jsonb, clock_timestamp(), %s, %s\n"
        "FROM generate_series(1, %d) g CROSS JOIN (VALUES %s) AS t(version, type, data)\n"
        "ORDER BY g, t.version;\n" % (HASH, count, sql_text(metadata_json()), CANONICAL, HASH, count, ", ".join(rows)))


if __name__ == "__main__":
    import sys
    print({"single": pgbench_single_event, "batch": pgbench_batch, "history": pgbench_history}[sys.argv[1]]())
