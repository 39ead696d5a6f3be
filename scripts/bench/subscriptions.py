#!/usr/bin/env python3
"""Subscriptions as a user finds them (issue 44). Entry point: scripts/bench/subscriptions.

One embedded cluster ($LEDGER_SUBSCRIPTIONS_DIR, default /var/tmp/ledger-subscriptions, wiped), one `ledger serve`
(release). --subscriptions subscriptions (default 83,334: 1,000,008 renewals), each owned by its own account
acct-<n>, with twelve monthly periods of 2026 at 4.99–8.99 USD or EUR (one in 97 refunded), written straight into
the projections the append writes (`subscriptions` with its facts, `subscription_transactions`) by INSERT … SELECT:
a million renewals through the API would take the run's hour, and neither read looks at the events. No ANALYZE.

- Entitlements: 16 wrk clients ask GET /v1/accounts/acct-<random>/entitlements (the service reads the account's
  subscription row and derives the entitlement from its signed facts), against pgbench -M prepared reading that row
  (`SELECT facts::text FROM subscriptions WHERE account_id = $1`): the minimal store's one-row read.
- MRR: `ledger report subscriptions` over the year, three times (the whole command: start, connect, query, CSV),
  against psql running the least PostgreSQL can do for a per-day answer over the same rows: one scan grouped by day,
  product and currency.
Prints one table; writes bench-results/subscriptions.json.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import (ROOT, Cluster, Service, free_port, log, machine, pg_tool, psql, release_ledger, run_pgbench,  # noqa: E402
                   save_and_exit, sh)
import wrkload  # noqa: E402

FILL = """
INSERT INTO subscriptions (subscription_id, account_id, order_id, facts, version, updated_at)
SELECT 'sub-' || s, 'acct-' || s, NULL,
       jsonb_build_object(
         'transactions', (SELECT jsonb_agg(jsonb_build_object(
             'transactionId', 'sub-' || s || '-' || m, 'originalTransactionId', 'sub-' || s, 'productId', 'pro.' || (s % 5),
             'environment', 'production', 'purchasedAt', to_char(p AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
             'expiresAt', to_char((p + interval '1 month') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
             'price', jsonb_build_object('value', 499 + (s % 5) * 100, 'currency', CASE WHEN s % 4 = 0 THEN 'EUR' ELSE 'USD' END),
             'familyShared', false, 'signedAt', to_char(p AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')))
           FROM generate_series(0, 11) m,
                LATERAL (SELECT timestamptz '2026-01-01' + (s % 28) * interval '1 day' + m * interval '1 month' AS p) x),
         'renewalInfos', jsonb_build_array(jsonb_build_object('autoRenew', s % 3 <> 0, 'signedAt', '2026-01-01T00:00:00Z',
             'expirationIntent', CASE s % 3 WHEN 0 THEN 'voluntary' END)),
         'notificationIds', '[]'::jsonb, 'grants', '{}'::jsonb),
       12, now()
FROM generate_series(1, @COUNT@) s;
INSERT INTO subscription_transactions (transaction_id, subscription_id, product_id, purchased_at, expires_at, revoked_at,
    environment, price_value, currency, family_shared, periods_per_year, refunded_value)
SELECT 'sub-' || s || '-' || m, 'sub-' || s, 'pro.' || (s % 5), p, p + interval '1 month',
       CASE WHEN (s * 13 + m) % 97 = 0 THEN p + interval '10 days' END, 'production', 499 + (s % 5) * 100,
       CASE WHEN s % 4 = 0 THEN 'EUR' ELSE 'USD' END, false, 12,
       CASE WHEN (s * 13 + m) % 97 = 0 THEN 499 + (s % 5) * 100 END
FROM generate_series(1, @COUNT@) s, generate_series(0, 11) m,
     LATERAL (SELECT timestamptz '2026-01-01' + (s % 28) * interval '1 day' + m * interval '1 month' AS p) x;
"""

MINIMAL_ENTITLEMENT = """-- minimal store: one account's subscription row (scripts/bench/subscriptions.py)
\\set k random(1, :accounts)
SELECT facts::text FROM subscriptions WHERE account_id = ('acct-' || :k::text);
"""

MINIMAL_MRR = """SELECT (purchased_at AT TIME ZONE 'UTC')::date, product_id, currency, count(*), sum(price_value * periods_per_year)
FROM subscription_transactions WHERE environment = 'production' AND NOT family_shared AND price_value IS NOT NULL
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"""


def timed(command, env=None):
    started = time.monotonic()
    sh(command, env=env)
    return time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subscriptions", type=int, default=83_334)
    parser.add_argument("--duration", type=float, default=15, help="seconds per look-up phase")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench-results"))
    args = parser.parse_args()
    ledger = release_ledger()
    os.makedirs(args.out, exist_ok=True)
    cluster = Cluster(ledger, os.environ.get("LEDGER_SUBSCRIPTIONS_DIR", "/var/tmp/ledger-subscriptions"))
    service = None
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), "clients": args.clients,
               "subscriptions": args.subscriptions, "renewals": args.subscriptions * 12, "failed": False}
    try:
        log(f"starting the embedded cluster in {cluster.directory}")
        cluster.start()
        url = cluster.url
        log(f"writing {args.subscriptions:,} subscriptions, {args.subscriptions * 12:,} renewals")
        started = time.monotonic()
        psql(url, FILL.replace("@COUNT@", str(args.subscriptions)))
        results["fill_s"] = time.monotonic() - started
        token = sh([ledger, "tokens", "create", "--name", "subscriptions-bench", "--scopes", "events:read",
                    "--database-url", url]).stdout.strip().splitlines()[-1].strip()
        port = free_port()
        service = Service(ledger, url, port, os.path.join(args.out, "subscriptions-serve.log"))
        service.start()
        log(f"entitlement look-ups x{args.clients}, {args.duration:.0f} s: the service, then the minimal store")
        served = wrkload._wrk("entitlements", wrkload.loadgen_threads(args.clients), args.clients, args.duration, port, "history.lua",
                              [token, str(args.subscriptions), "/v1/accounts/acct-%d/entitlements"], 1)
        minimal = run_pgbench(url, MINIMAL_ENTITLEMENT, "entitlements", args.clients, args.duration,
                              {"accounts": args.subscriptions}, args.out, name="minimal")
        results["entitlements"] = {"service": {k: served[k] for k in ("requests_per_s", "p50_ms", "p99_ms", "failed")},
                                   "minimal": {k: minimal[k] for k in ("requests_per_s", "p50_ms", "p99_ms", "failed")}}
        results["failed"] |= served["failed"] or minimal["failed"]
        service.stop()
        service = None
        log("the MRR report over the year, three times each: ledger report subscriptions, then one grouping scan")
        env = dict(os.environ, DATABASE_URL=url)
        report = [timed([ledger, "report", "subscriptions", "--from", "2026-01-01", "--to", "2026-12-31", "--csv"], env)
                  for _ in range(3)]
        scan = [timed([pg_tool("psql"), "-X", "-q", "-o", "/dev/null", "-c", MINIMAL_MRR, url]) for _ in range(3)]
        results["mrr"] = {"report_s": report, "minimal_s": scan}
    finally:
        if service:
            service.stop()
        cluster.stop(quiet=True)

    service, minimal = results["entitlements"]["service"], results["entitlements"]["minimal"]
    print("| work | the service /s or s | minimal store | ratio | p50 ms (service / minimal) | p99 ms |")
    print("|---|---|---|---|---|---|")
    print(f"| entitlement look-ups x{args.clients} | {service['requests_per_s']:,.0f} /s | {minimal['requests_per_s']:,.0f} /s "
          f"| {service['requests_per_s'] / minimal['requests_per_s']:.2f}× "
          f"| {service['p50_ms']:.2f} / {minimal['p50_ms']:.2f} | {service['p99_ms']:.2f} / {minimal['p99_ms']:.2f} |")
    report, scan = min(results["mrr"]["report_s"]), min(results["mrr"]["minimal_s"])
    print(f"| MRR over {results['renewals']:,} renewals (best of 3) | {report:.2f} s | {scan:.2f} s "
          f"| {scan / report:.2f}× | | |")
    save_and_exit(results, os.path.join(args.out, "subscriptions.json"))


if __name__ == "__main__":
    main()
