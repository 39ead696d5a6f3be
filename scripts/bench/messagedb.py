"""Message DB (github.com/message-db/message-db, MIT) as a measured peer: installed from its own scripts into a
database of its own (`ledger_bench_mdb`) beside the ledger's, on the same cluster, in the same run, and driven by
pgbench with its own functions (`write_message`, `get_stream_messages`), no HTTP in front. Nothing of it is in this
repository: its scripts are read from $MESSAGE_DB_DIR (default ../shared/peers/message-db beside the checkout); without
them the column is left empty.
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
DIRECTORY = os.environ.get("MESSAGE_DB_DIR") or os.path.abspath(os.path.join(HERE, "..", "..", "..", "shared", "peers", "message-db"))
DATABASE = "ledger_bench_mdb"

LIFECYCLE = [
    ("order.created", '{"accountId":"acct-1","productId":"gems.1","amount":{"value":499,"currency":"USD"},"provider":"app_store"}'),
    ("payment.queued", "{}"),
    ("receipt.received", '{"transactionId":"t-1","receipt":"MIIT"}'),
    ("receipt.verified", '{"transactionId":"t-1","productId":"gems.1","environment":"production","purchasedAt":"2026-11-22T10:00:00Z"}'),
    ("order.granted", '{"transactionId":"t-1","accountId":"acct-1","items":{"gems":100}}'),
    ("order.finished", "{}"),
]


def available():
    return all(os.path.exists(os.path.join(DIRECTORY, name)) for name in ["install.sql", "write1.sql", "batch6.sql"])


def script(name):
    with open(os.path.join(DIRECTORY, name)) as f:
        return f.read()


def preload_history_sql(count):
    """Streams h-1…h-count, the 6 messages of a purchase each, written through `write_message` with their expected
    versions, as Message DB writes them."""
    values = ", ".join(f"({version}, '{kind}', '{data}')" for version, (kind, data) in enumerate(LIFECYCLE))
    return (
        "DO $$ DECLARE g int; m record; BEGIN\n"
        f"  FOR g IN 1..{count} LOOP\n"
        f"    FOR m IN SELECT * FROM (VALUES {values}) AS t(version, kind, data) ORDER BY version LOOP\n"
        "      PERFORM message_store.write_message(gen_random_uuid()::varchar, 'h-' || g, m.kind, m.data::jsonb,\n"
        "                                          '{\"actor\":\"perf\"}'::jsonb, m.version - 1);\n"
        "    END LOOP;\n"
        "  END LOOP;\n"
        "END $$;\n")


def pgbench_scripts():
    """Its own scripts for single appends (a message on a new stream) and batches (a 6-message purchase in one
    transaction); a history read is one stream's messages."""
    return {
        "single": script("write1.sql"),
        "batch": script("batch6.sql"),
        "history": ("-- Message DB peer: one stream's messages\n"
                    "\\set s random(1, :horders)\n"
                    "SELECT * FROM message_store.get_stream_messages(('h-' || :s)::varchar);\n"),
    }
