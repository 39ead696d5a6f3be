"""The benchmark's workload, in one place: the 6-event order lifecycle posted to the service, and the pgbench
scripts that issue the SQL the service issues for the same work (raw baseline).

The SQL below mirrors, statement for statement, what one HTTP request costs the database:
- `TokenStore.authenticate`: one token lookup per request (outside the append transaction);
- `EventStore.appendOnce`: BEGIN; `lockStream` (stream upsert RETURNING previous version, clock, last hash);
  `storedResult` (idempotency check over unnest(ids, types, data)); the inline projection `OrderRows.decideAndProject`
  (`load` the order row; `bindings` when an event names a transactionId; `save`: orders upsert, then the
  order_transactions upsert once the order has a transactionId); `insert` (unnest … WITH ORDINALITY RETURNING); COMMIT;
- `EventStore.read` for a history: one SELECT of the order's events.
pgbench runs them in extended protocol (`-M extended`), the protocol PostgresNIO uses (unnamed statements).
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
# pgbench scripts. Variables: :run (run tag), :phase (distinct per pgbench run: order ids never repeat), :tokhash (hex SHA-256 of the bench token), :n (per-client counter,
# starts at 0 with -D n=0; pgbench keeps a client's variables from one transaction to the next), :horders.

ORDER_COLUMNS = ("order_id, account_id, product_id, quantity, amount_value, currency, provider, environment, "
                 "app_account_token, state, version, transaction_id, flags, verification_attempts, last_error_code, "
                 "refunded_value, refunded_currency, created_at, updated_at, granted_at, finished_at, refunded_at")

EVENT_COLUMNS = "position, order_id, version, event_id, type, data::text, metadata::text, occurred_at, recorded_at"

OID = "('p' || :oid::text)"          # the order id, one bind parameter like the service's
TXID = "('t-p' || :oid::text)"      # its provider transactionId
CANONICAL = "'\\x" + ("7b22" * 110) + "'::bytea"   # stand-in canonical bytes (~220 bytes, as the service's)
HASH = "'\\x" + ("ab" * 32) + "'::bytea"           # stand-in SHA-256


def sql_text(value):
    return "'" + value.replace("'", "''") + "'"


def metadata_json():
    return json.dumps({"actor": "bench", "requestId": "00000000-0000-4000-8000-000000000000"}, separators=(",", ":"))


def authenticate():
    return "SELECT name, scopes FROM api_tokens WHERE secret_hash = decode(:tokhash, 'hex') AND revoked_at IS NULL;\n"


def event_id(version):
    return f"md5({OID} || '/{version}')::uuid"


def append_transaction(steps, first_version):
    """The statements of one append of lifecycle events `steps` (consecutive), after version first_version - 1."""
    count = len(steps)
    previous = first_version - 1
    ids = ", ".join(event_id(first_version + i) for i in range(count))
    types = ", ".join(sql_text(LIFECYCLE_TYPES[s]) for s in steps)
    # The transactionId in data is per order: built in SQL so each order's rows are its own.
    datas = []
    for s in steps:
        data = json.dumps(event_data(s, "@@TX@@"), separators=(",", ":"), sort_keys=True)
        literal = sql_text(data)
        if "@@TX@@" in data:
            left, right = literal.split("@@TX@@")
            literal = f"({left}' || {TXID} || '{right})"
        datas.append(literal)
    datas = ", ".join(datas)
    metas = ", ".join([sql_text(metadata_json())] * count)
    last = steps[-1]
    state = STATES[last]
    has_tx = last >= 2
    tx = TXID if has_tx else "NULL"
    granted = "now()" if last >= 4 else "NULL"
    finished = "now()" if last >= 5 else "NULL"
    named = [TXID for s in steps if NAMES_TRANSACTION[s]]
    out = ["BEGIN;\n"]
    # EventStore.lockStream
    out.append(
        f"INSERT INTO streams AS s (order_id, version) VALUES ({OID}, {count})\n"
        f"ON CONFLICT (order_id) DO UPDATE SET version = s.version + EXCLUDED.version\n"
        f"RETURNING s.version - {count}, clock_timestamp(), s.last_hash;\n")
    # EventStore.storedResult
    out.append(
        f"SELECT e.event_id, e.order_id, e.version, e.position,\n"
        f"       (e.order_id = {OID} AND e.type = n.type AND e.data = n.data::jsonb)\n"
        f"FROM unnest(ARRAY[{ids}]::uuid[], ARRAY[{types}]::text[], ARRAY[{datas}]::text[]) AS n(event_id, type, data)\n"
        f"JOIN events e USING (event_id);\n")
    # OrderRows.load
    out.append(f"SELECT {ORDER_COLUMNS} FROM orders WHERE order_id = {OID};\n")
    # OrderRows.bindings
    if named:
        out.append(
            f"SELECT transaction_id, order_id, granted_at IS NOT NULL FROM order_transactions\n"
            f"WHERE transaction_id = ANY(ARRAY[{', '.join(named)}]);\n")
    # OrderRows.save
    out.append(
        f"INSERT INTO orders ({ORDER_COLUMNS})\n"
        f"VALUES ({OID}, 'acct-42', 'gems.100', 1, 499, 'USD', 'app_store', 'production', NULL, '{state}', {previous + count},\n"
        f"        {tx}, '{{}}', 0, NULL, NULL, NULL, now(), now(), {granted}, {finished}, NULL)\n"
        f"ON CONFLICT (order_id) DO UPDATE SET\n"
        f"    account_id = EXCLUDED.account_id, product_id = EXCLUDED.product_id, quantity = EXCLUDED.quantity,\n"
        f"    amount_value = EXCLUDED.amount_value, currency = EXCLUDED.currency, provider = EXCLUDED.provider,\n"
        f"    environment = EXCLUDED.environment, app_account_token = EXCLUDED.app_account_token, state = EXCLUDED.state,\n"
        f"    version = EXCLUDED.version, transaction_id = EXCLUDED.transaction_id, flags = EXCLUDED.flags,\n"
        f"    verification_attempts = EXCLUDED.verification_attempts, last_error_code = EXCLUDED.last_error_code,\n"
        f"    refunded_value = EXCLUDED.refunded_value, refunded_currency = EXCLUDED.refunded_currency,\n"
        f"    created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, granted_at = EXCLUDED.granted_at,\n"
        f"    finished_at = EXCLUDED.finished_at, refunded_at = EXCLUDED.refunded_at;\n")
    if has_tx:
        out.append(
            f"INSERT INTO order_transactions AS t (transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)\n"
            f"VALUES ({TXID}, {OID}, 'acct-42', {granted}, {finished}, NULL)\n"
            f"ON CONFLICT (transaction_id) DO UPDATE SET\n"
            f"    granted_at = EXCLUDED.granted_at, finished_at = EXCLUDED.finished_at, refunded_at = EXCLUDED.refunded_at\n"
            f"    WHERE t.order_id = EXCLUDED.order_id\n"
            f"RETURNING 1;\n")
    # EventStore.insert
    out.append(
        f"WITH head AS (UPDATE streams SET last_hash = {HASH} WHERE order_id = {OID})\n"
        f"INSERT INTO events (order_id, version, event_id, type, data, metadata, occurred_at, recorded_at, canonical, hash)\n"
        f"SELECT {OID}, {previous} + n.ordinal, n.event_id, n.type, n.data::jsonb, n.metadata::jsonb,\n"
        f"       NULLIF(n.occurred_at, '')::timestamptz, clock_timestamp(), n.canonical, n.hash\n"
        f"FROM unnest(ARRAY[{ids}]::uuid[], ARRAY[{types}]::text[], ARRAY[{datas}]::text[], ARRAY[{metas}]::text[],\n"
        f"            ARRAY[{', '.join([repr('')] * count)}]::text[], ARRAY[{', '.join([CANONICAL] * count)}]::bytea[],\n"
        f"            ARRAY[{', '.join([HASH] * count)}]::bytea[])\n"
        f"     WITH ORDINALITY AS n(event_id, type, data, metadata, occurred_at, canonical, hash, ordinal)\n"
        f"ORDER BY n.ordinal\n"
        f"RETURNING event_id, version, position;\n")
    out.append("COMMIT;\n")
    return "".join(out)


def pgbench_single_event():
    """One event per transaction: each client walks its own orders through the lifecycle, event by event."""
    out = ["-- one lifecycle event per transaction (generated by scripts/bench/workload.py)\n",
           "\\set step :n % 6\n",
           "\\set oid ((:run * 100 + :phase) * 1000 + :client_id) * 10000000 + :n / 6\n",
           "\\set n :n + 1\n",
           authenticate()]
    for step in range(6):
        out.append(("\\if" if step == 0 else "\\elif") + f" :step = {step}\n")
        out.append(append_transaction([step], step + 1))
    out.append("\\endif\n")
    return "".join(out)


def pgbench_batch():
    """A whole lifecycle as one append (expectedVersion 0) to a fresh order."""
    return ("-- one 6-event lifecycle per transaction (generated by scripts/bench/workload.py)\n"
            "\\set oid ((:run * 100 + :phase) * 1000 + :client_id) * 10000000 + :n\n"
            "\\set n :n + 1\n" + authenticate() + append_transaction(list(range(6)), 1))


def pgbench_history():
    """GET /v1/orders/h-<k>/history of a random preloaded order."""
    return ("-- one order history read (generated by scripts/bench/workload.py)\n"
            "\\set k random(1, :horders)\n" + authenticate() +
            f"SELECT {EVENT_COLUMNS} FROM events WHERE order_id = ('h-' || :k::text) ORDER BY version;\n")


def preload_history_sql(count):
    """For the raw database: `count` finished orders h-1…h-count of 6 events each (stand-in seals)."""
    rows = []
    for step in range(6):
        data = json.dumps(event_data(step, "@@TX@@"), separators=(",", ":"), sort_keys=True)
        rows.append(f"({step + 1}, {sql_text(LIFECYCLE_TYPES[step])}, {sql_text(data)})")
    return (
        "INSERT INTO streams (order_id, version, last_hash) SELECT 'h-' || g, 6, %s FROM generate_series(1, %d) g;\n"
        "INSERT INTO events (order_id, version, event_id, type, data, metadata, recorded_at, canonical, hash)\n"
        "SELECT 'h-' || g, t.version, gen_random_uuid(), t.type, replace(t.data, '@@TX@@', 't-h-' || g)::jsonb,\n"
        "       %s::jsonb, clock_timestamp(), %s, %s\n"
        "FROM generate_series(1, %d) g CROSS JOIN (VALUES %s) AS t(version, type, data)\n"
        "ORDER BY g, t.version;\n" % (HASH, count, sql_text(metadata_json()), CANONICAL, HASH, count, ", ".join(rows)))


if __name__ == "__main__":
    import sys
    print({"single": pgbench_single_event, "batch": pgbench_batch, "history": pgbench_history}[sys.argv[1]]())
