#!/usr/bin/env python3
"""How long an event takes from its append's 201 to the global feed (issue 43). Entry point: scripts/bench/feed-lag.

One embedded cluster ($LEDGER_FEED_LAG_DIR, default /var/tmp/ledger-feed-lag, wiped) and one `ledger serve` (release;
$LEDGER_BIN). 16 clients append new orders (`order.created`, one request each, closed loop) while one reader polls
`GET /v1/events?after=…` as a consumer does (every 5 ms, 1000 events a page); each event's lag is the time from its
201 to the page that first held it. Two phases of --seconds each: alone, then with an unrelated write transaction
held open for --hold seconds in another database of the same cluster (`psql`: BEGIN, a write, pg_sleep, COMMIT),
started just before the phase. Prints p50 / p99 / max per phase; writes bench-results/feed-lag.json.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import ROOT, Cluster, Service, free_port, log, percentile, pg_tool, psql, release_ledger, sh, with_database  # noqa: E402

CLIENTS = 16


def request(port, token, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as answer:
        return answer.status, json.loads(answer.read())


def phase(port, token, seconds, tag):
    """Appends for `seconds` from CLIENTS threads while a reader follows the feed; returns the lags in ms."""
    acknowledged, seen = {}, {}
    lock = threading.Lock()
    stop = time.time() + seconds
    cursor = None
    while True:  # the feed's end now: the reader starts from there
        _, page = request(port, token, "GET", f"/v1/events?limit=1000" + (f"&after={cursor}" if cursor else ""))
        if not page["events"]:
            break
        cursor = page["next"]

    def append(client):
        n = 0
        while time.time() < stop:
            n += 1
            status, answer = request(port, token, "POST", f"/v1/orders/lag-{tag}-{client}-{n}/events", {
                "eventId": str(uuid.uuid4()), "type": "order.created",
                "data": {"accountId": f"acct-{client}", "productId": "gems.100", "provider": "app_store",
                         "amount": {"value": 499, "currency": "USD"}}})
            now = time.time()
            with lock:
                for event in answer["events"]:
                    acknowledged[event["position"]] = now

    done = threading.Event()

    def follow():
        nonlocal cursor
        while not done.is_set() or len(seen) < len(acknowledged):
            _, page = request(port, token, "GET", "/v1/events?limit=1000" + (f"&after={cursor}" if cursor else ""))
            now = time.time()
            for event in page["events"]:
                seen.setdefault(event["position"], now)
            cursor = page["next"] or cursor
            if not page["events"]:
                time.sleep(0.005)

    reader = threading.Thread(target=follow)
    reader.start()
    writers = [threading.Thread(target=append, args=(k,)) for k in range(CLIENTS)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    done.set()
    reader.join()
    return sorted((seen[p] - t) * 1000 for p, t in acknowledged.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=15, help="appending per phase (default 15)")
    parser.add_argument("--hold", type=int, default=60, help="how long the unrelated transaction stays open (default 60)")
    args = parser.parse_args()
    ledger = release_ledger()
    cluster = Cluster(ledger, os.environ.get("LEDGER_FEED_LAG_DIR", "/var/tmp/ledger-feed-lag"))
    log("starting the cluster")
    cluster.start()
    service = None
    holder = None
    try:
        psql(cluster.url, "CREATE DATABASE elsewhere")
        token = sh([ledger, "tokens", "create", "--name", "feed-lag", "--scopes", "events:write,events:read",
                    "--database-url", cluster.url]).stdout.strip().splitlines()[-1].strip()
        port = free_port()
        service = Service(ledger, cluster.url, port, os.path.join(ROOT, "bench-results", "feed-lag-serve.log"))
        os.makedirs(os.path.join(ROOT, "bench-results"), exist_ok=True)
        service.start()
        results = {}
        log(f"alone: {CLIENTS} clients append for {args.seconds} s while one reader follows the feed")
        results["alone"] = phase(port, token, args.seconds, "a")
        log(f"with a write transaction held open {args.hold} s in another database")
        holder = subprocess.Popen([pg_tool("psql"), with_database(cluster.url, "elsewhere"), "-q",
                                   "-c", "BEGIN", "-c", "CREATE TABLE imported (id int)", "-c", "INSERT INTO imported VALUES (1)",
                                   "-c", f"SELECT pg_sleep({args.hold})", "-c", "COMMIT"],
                                  stdout=subprocess.DEVNULL)
        time.sleep(1)  # the transaction has its id
        results["held"] = phase(port, token, args.seconds, "h")
        print(f"\nfeed lag from the append's 201 to the feed, {CLIENTS} appending clients, ms")
        print(f"{'phase':<44}{'events':>8}{'p50':>10}{'p99':>10}{'max':>10}")
        names = {"alone": "alone", "held": f"beside a write transaction held {args.hold} s"}
        summary = {}
        for key, lags in results.items():
            summary[key] = {"events": len(lags), "p50_ms": percentile(lags, 0.5), "p99_ms": percentile(lags, 0.99),
                            "max_ms": lags[-1] if lags else None}
            s = summary[key]
            print(f"{names[key]:<44}{s['events']:>8}{s['p50_ms']:>10.1f}{s['p99_ms']:>10.1f}{s['max_ms']:>10.1f}")
        with open(os.path.join(ROOT, "bench-results", "feed-lag.json"), "w") as f:
            json.dump(summary, f, indent=2)
    finally:
        if holder:
            holder.kill()
        if service:
            service.stop()
        cluster.stop(quiet=True)


if __name__ == "__main__":
    main()
