#!/usr/bin/env python3
"""How an append and a history read hold up as the log grows (issue 16). Entry point: scripts/bench/size.

One embedded cluster ($LEDGER_SIZE_DIR, default /var/tmp/ledger-size, wiped), one `ledger serve` (release), the
load generator of scripts/bench/run at 16 clients: single-event appends of new orders, then history reads of the
orders h-1…h-5000 written through the service first. Measured with the log at --small events (default 100,000),
then again after topping it up to --large events (default 10,000,000: copies of a service-written lifecycle under
new order ids, by INSERT … SELECT, then VACUUM ANALYZE). Prints one table and the tables' sizes; writes
bench-results/size.json. The large log needs ~1 KB of disk per event (about 9 GB at 10 million).
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import (ROOT, Cluster, log, machine, psql, release_ledger, run_loadgen, save_and_exit,  # noqa: E402
                   serve_with_history, top_up)

HISTORY_ORDERS = 5000


def sizes(url):
    row = psql(url, "SELECT count(*), pg_total_relation_size('events'), pg_indexes_size('events'), "
                    "pg_total_relation_size('orders') FROM events")
    events, total, indexes, orders = (int(v) for v in row.split("|"))
    return {"events": events, "events_mb": total / 2**20, "events_indexes_mb": indexes / 2**20, "orders_mb": orders / 2**20}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=100_000, help="events in the log for the first measurement")
    parser.add_argument("--large", type=int, default=10_000_000, help="events in the log for the second")
    parser.add_argument("--duration", type=float, default=15, help="seconds per phase")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench-results"))
    args = parser.parse_args()
    ledger = release_ledger()
    os.makedirs(args.out, exist_ok=True)
    cluster = Cluster(ledger, os.environ.get("LEDGER_SIZE_DIR", "/var/tmp/ledger-size"))
    service = None
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), "clients": args.clients,
               "seconds_per_phase": args.duration, "runs": [], "failed": False}
    try:
        log(f"starting the embedded cluster in {cluster.directory}")
        cluster.start()
        url = cluster.url
        service, port, token, run_tag = serve_with_history(ledger, url, os.path.join(args.out, "size-serve.log"), "size",
                                                           HISTORY_ORDERS)
        for target in (args.small, args.large):
            top_up(url, target, f"s{target}")
            run = {"size": sizes(url)}
            for kind in ("single", "history"):
                log(f"{run['size']['events']:,} events: {kind} x{args.clients}, {args.duration:.0f} s")
                data = run_loadgen(kind, args.clients, args.duration, port, token, f"{run_tag}{target}", HISTORY_ORDERS)
                run[kind] = {k: data[k] for k in ("requests_per_s", "p50_ms", "p99_ms", "failed")}
                results["failed"] |= data["failed"]
            results["runs"].append(run)
    finally:
        if service:
            service.stop()
        cluster.stop(quiet=True)

    print("| events in the log | events table + indexes | of which indexes | single appends /s | p50 ms | p99 ms "
          "| history reads /s | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run in results["runs"]:
        size, single, history = run["size"], run["single"], run["history"]
        print(f"| {size['events']:,} | {size['events_mb']:,.0f} MB | {size['events_indexes_mb']:,.0f} MB "
              f"| {single['requests_per_s']:,.0f} | {single['p50_ms']:.2f} | {single['p99_ms']:.2f} "
              f"| {history['requests_per_s']:,.0f} | {history['p50_ms']:.2f} | {history['p99_ms']:.2f} |")
    save_and_exit(results, os.path.join(args.out, "size.json"))


if __name__ == "__main__":
    main()
