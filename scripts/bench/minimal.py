"""The minimal event store: the least work PostgreSQL must do for what the ledger does (issue 13's baseline).

The other baseline (workload.py) replays the service's own statements, so it measures how well the service drives
its own SQL. This one asks what PostgreSQL can do at all for the same work, so the ratio says how far the service
is from the limit:
- an events table (position, order id, version unique per order, event id unique, type, data, time) and one
  projection row per order (version, state, time);
- an append is ONE statement, one implicit transaction, one round trip: insert the event(s) and upsert the order's
  projection row; the (order_id, version) unique key is the optimistic-concurrency check; commits are durable
  (`synchronous_commit` stays on);
- a history read is one SELECT of the order's events.
pgbench runs these in its own database (`ledger_bench_min`) of the same cluster, with the same client counts.
"""

import json

import workload

SCHEMA = """
CREATE TABLE events (
    position    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id    text NOT NULL,
    version     integer NOT NULL,
    event_id    uuid NOT NULL UNIQUE,
    type        text NOT NULL,
    data        jsonb NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (order_id, version)
);
CREATE TABLE orders (
    order_id   text PRIMARY KEY,
    version    integer NOT NULL,
    state      text NOT NULL,
    updated_at timestamptz NOT NULL
);
"""

OID = "('m' || :oid::text)"


def _data_literal(step, transaction_sql):
    """Event `step`'s data as a SQL text expression, its transactionId built from `transaction_sql`."""
    literal = workload.sql_text(json.dumps(workload.event_data(step, "@@TX@@"), separators=(",", ":"), sort_keys=True))
    if "@@TX@@" in literal:
        left, right = literal.split("@@TX@@")
        literal = f"({left}' || {transaction_sql} || '{right})"
    return literal


def _append(steps, order_sql):
    """One statement: the events of lifecycle `steps` (consecutive) and the order's projection row."""
    tx = f"('t-' || {order_sql})"
    rows = ", ".join(
        f"({step + 1}, {workload.sql_text(workload.LIFECYCLE_TYPES[step])}, {_data_literal(step, tx)}, "
        f"{workload.sql_text(workload.STATES[step])})" for step in steps)
    return (
        f"WITH appended AS (\n"
        f"    INSERT INTO events (order_id, version, event_id, type, data)\n"
        f"    SELECT {order_sql}, n.version, gen_random_uuid(), n.type, n.data::jsonb\n"
        f"    FROM (VALUES {rows}) AS n(version, type, data, state) ORDER BY n.version\n"
        f"    RETURNING version)\n"
        f"INSERT INTO orders (order_id, version, state, updated_at)\n"
        f"SELECT {order_sql}, max(version), {workload.sql_text(workload.STATES[steps[-1]])}, now() FROM appended\n"
        f"ON CONFLICT (order_id) DO UPDATE SET version = EXCLUDED.version, state = EXCLUDED.state,\n"
        f"    updated_at = EXCLUDED.updated_at;\n")


def pgbench_single_event():
    """One event per transaction: each client walks its own orders through the lifecycle, event by event."""
    out = ["-- minimal store: one lifecycle event per statement (scripts/bench/minimal.py)\n",
           "\\set step :n % 6\n",
           "\\set oid ((:run * 100 + :phase) * 1000 + :client_id) * 10000000 + :n / 6\n",
           "\\set n :n + 1\n"]
    for step in range(6):
        out.append(("\\if" if step == 0 else "\\elif") + f" :step = {step}\n")
        out.append(_append([step], OID))
    out.append("\\endif\n")
    return "".join(out)


def pgbench_batch():
    """A whole lifecycle as one statement, to a fresh order."""
    return ("-- minimal store: one 6-event lifecycle per statement (scripts/bench/minimal.py)\n"
            "\\set oid ((:run * 100 + :phase) * 1000 + :client_id) * 10000000 + :n\n"
            "\\set n :n + 1\n" + _append(list(range(6)), OID))


def pgbench_history():
    """One preloaded order's 6 events."""
    return ("-- minimal store: one order's history (scripts/bench/minimal.py)\n"
            "\\set k random(1, :horders)\n"
            "SELECT position, order_id, version, event_id, type, data::text, recorded_at FROM events\n"
            "WHERE order_id = ('h-' || :k::text) ORDER BY version;\n")


def preload_history_sql(count):
    """Orders h-1…h-count, 6 events each, with their projection rows."""
    rows = ", ".join(
        f"({step + 1}, {workload.sql_text(workload.LIFECYCLE_TYPES[step])}, {_data_literal(step, chr(39) + 't-h-' + chr(39) + ' || g')})"
        for step in range(6))
    return (
        f"INSERT INTO events (order_id, version, event_id, type, data)\n"
        f"SELECT 'h-' || g, t.version, gen_random_uuid(), t.type, t.data::jsonb\n"
        f"FROM generate_series(1, {count}) g CROSS JOIN LATERAL (VALUES {rows}) AS t(version, type, data)\n"
        f"ORDER BY g, t.version;\n"
        f"INSERT INTO orders SELECT 'h-' || g, 6, 'finished', now() FROM generate_series(1, {count}) g;\n")


if __name__ == "__main__":
    import sys
    print({"schema": lambda: SCHEMA, "single": pgbench_single_event, "batch": pgbench_batch,
           "history": pgbench_history, "preload": lambda: preload_history_sql(3)}[sys.argv[1]]())
