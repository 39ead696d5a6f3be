#!/usr/bin/env python3
"""Webhooks, measured (issue 45). Entry point: scripts/bench/webhooks.

One embedded cluster ($LEDGER_WEBHOOKS_BENCH_DIR, default /var/tmp/ledger-webhooks-bench, wiped), one `ledger serve`
(release; $LEDGER_BIN) allowed to send to 127.0.0.1, and a receiver on this machine (a threaded Python HTTP server
that answers 204 at once and notes when each delivery arrived). Three phases:

0. The first endpoint on a long ledger: the log is grown to --history events (copies of one lifecycle, by INSERT …
   SELECT) while no endpoint exists; then an endpoint is added and one order appended: the time from its 201 to its
   delivery (the feed consumer `webhooks` starts at the beginning of the feed).
1. Throughput: an endpoint is added and disabled, --backlog events are appended (one new order each, 16 clients),
   queued, then the endpoint is enabled: deliveries per second until the receiver has had every one.
2. Latency: another endpoint, enabled; 16 clients append new orders (`order.created`, one request each) for
   --seconds, first as fast as they can (closed loop: the machine's two cores are then the appends'), then paced at
   --rate events a second in all; each event's latency is the time from its append's 201 to its arrival at the
   receiver.

Prints the figures; writes bench-results/webhooks.json.
"""

import argparse
import http.server
import json
import os
import sys
import threading
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import ROOT, Cluster, Service, free_port, log, percentile, release_ledger, run_loadgen, sh, top_up  # noqa: E402

CLIENTS = 16


def request(port, token, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as answer:
        return answer.status, json.loads(answer.read())


class Receiver:
    """Notes the first arrival of each event id, by endpoint path."""

    def __init__(self):
        self.arrived = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                now = time.time()
                event_id = json.loads(body)["data"]["event"]["eventId"]
                with receiver.lock:
                    receiver.arrived.setdefault((self.path, event_id), now)
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, path):
        with self.lock:
            return sum(1 for (p, _) in self.arrived if p == path)


def append(port, token, tag, stop=None, total=None, rate=None):
    """16 clients append new orders until `stop` (a time) or until `total` were appended, `rate` a second in all when
    given; their 201 times by event id."""
    acknowledged, lock = {}, threading.Lock()
    counter = iter(range(total if total is not None else 1 << 62))

    def client(k):
        next_at = time.time() + (k / rate if rate else 0)
        while stop is None or time.time() < stop:
            if rate:
                time.sleep(max(0.0, next_at - time.time()))
                next_at += CLIENTS / rate
            with lock:
                n = next(counter, None)
            if n is None:
                return
            event_id = str(uuid.uuid4())
            request(port, token, "POST", f"/v1/orders/{tag}-{k}-{n}/events", {
                "eventId": event_id, "type": "order.created",
                "data": {"accountId": f"acct-{k}", "productId": "gems.100", "provider": "app_store",
                         "amount": {"value": 499, "currency": "USD"}}})
            with lock:
                acknowledged[event_id] = time.time()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return acknowledged


def wait_for(condition, limit, every=0.01):
    deadline = time.time() + limit
    while not condition():
        if time.time() > deadline:
            raise SystemExit("gave up waiting for the deliveries")
        time.sleep(every)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--history", type=int, default=1_000_000, help="events in the log before the first endpoint")
    parser.add_argument("--backlog", type=int, default=10_000, help="events delivered in the throughput phase")
    parser.add_argument("--seconds", type=int, default=15, help="appending in the latency phase")
    parser.add_argument("--interval", type=int, default=250, help="serve --webhook-interval, ms (default 250)")
    parser.add_argument("--rate", type=int, default=200, help="events a second in the paced latency phase (default 200)")
    args = parser.parse_args()
    ledger = release_ledger()
    cluster = Cluster(ledger, os.environ.get("LEDGER_WEBHOOKS_BENCH_DIR", "/var/tmp/ledger-webhooks-bench"))
    log("starting the cluster")
    cluster.start()
    service = None
    receiver = Receiver()
    hooks = f"http://127.0.0.1:{receiver.port}"
    try:
        def cli(*arguments):
            return sh([ledger, *arguments, "--database-url", cluster.url]).stdout.strip()

        token = cli("tokens", "create", "--name", "bench", "--scopes", "events:write,events:read").splitlines()[-1]
        port = free_port()
        os.makedirs(os.path.join(ROOT, "bench-results"), exist_ok=True)
        service = Service(ledger, cluster.url, port, os.path.join(ROOT, "bench-results", "webhooks-serve.log"),
                          ["--webhook-allow-hosts", "127.0.0.1", "--webhook-interval", str(args.interval)])
        service.start()

        log(f"first endpoint: the log grown to {args.history} events before any endpoint exists")
        if run_loadgen("preload", CLIENTS, 0, port, token, "first", 1)["failed"]:
            raise SystemExit("writing the order to copy failed")
        top_up(cluster.url, args.history, "old")
        cli("webhooks", "add", "--name", "first", "--url", hooks + "/first", "--events", "*")
        (event_id, at), = append(port, token, "first", total=1).items()
        # Its own event: those recorded in the second before the endpoint are sent to it too (README).
        wait_for(lambda: ("/first", event_id) in receiver.arrived, 1800, every=0.05)
        first_delivery = receiver.arrived[("/first", event_id)] - at
        cli("webhooks", "remove", "first")

        log(f"throughput: {args.backlog} events appended while the endpoint is disabled, then it is enabled")
        cli("webhooks", "add", "--name", "drain", "--url", hooks + "/drain", "--events", "order.*")
        cli("webhooks", "disable", "drain")
        append(port, token, "backlog", total=args.backlog)
        wait_for(lambda: '"pending":%d' % args.backlog in cli("webhooks", "list", "--json"), 300, every=0.5)
        cpu_before = service.status()["cpu_s"]
        started = time.time()
        cli("webhooks", "enable", "drain")
        wait_for(lambda: receiver.count("/drain") >= args.backlog, 900)
        took = time.time() - started
        cpu = service.status()["cpu_s"] - cpu_before
        cli("webhooks", "remove", "drain")

        cli("webhooks", "add", "--name", "live", "--url", hooks + "/live", "--events", "*")

        def latency(tag, rate=None):
            log(f"latency: {CLIENTS} clients append for {args.seconds} s" + (f", {rate} events/s in all" if rate else ""))
            acknowledged = append(port, token, tag, stop=time.time() + args.seconds, rate=rate)
            wait_for(lambda: all(("/live", e) in receiver.arrived for e in acknowledged), 600)
            with receiver.lock:
                lags = sorted((receiver.arrived[("/live", e)] - t) * 1000 for e, t in acknowledged.items())
            return {"events": len(lags), "appends_per_second": round(len(lags) / args.seconds, 1),
                    "interval_ms": args.interval, "p50_ms": round(percentile(lags, 0.5), 1),
                    "p99_ms": round(percentile(lags, 0.99), 1), "max_ms": round(lags[-1], 1)}

        flat_out = latency("live")
        paced = latency("paced", args.rate)

        summary = {
            "first_endpoint": {"history_events": args.history, "seconds_to_first_delivery": round(first_delivery, 2)},
            "throughput": {"events": args.backlog, "seconds": round(took, 2), "per_second": round(args.backlog / took, 1),
                           "serve_cpu_seconds": round(cpu, 2)},
            "latency": flat_out,
            "latency_paced": paced,
        }
        t = summary["throughput"]
        print(f"\nwebhooks to a receiver on this machine (serve --webhook-interval {args.interval} ms)")
        print(f"  backlog: {t['events']} deliveries in {t['seconds']} s = {t['per_second']}/s "
              f"(serve used {t['serve_cpu_seconds']} CPU-s)")
        print(f"  first endpoint added to a log of {args.history} events: its first delivery "
              f"{summary['first_endpoint']['seconds_to_first_delivery']} s after the 201")
        for l, how in ((flat_out, "as fast as they can"), (paced, "paced")):
            print(f"  append 201 → delivery, {CLIENTS} clients appending {how} ({l['appends_per_second']} events/s): "
                  f"p50 {l['p50_ms']} ms, p99 {l['p99_ms']} ms, max {l['max_ms']} ms over {l['events']} events")
        with open(os.path.join(ROOT, "bench-results", "webhooks.json"), "w") as f:
            json.dump(summary, f, indent=2)
    finally:
        if service:
            service.stop()
        cluster.stop(quiet=True)
        receiver.server.shutdown()


if __name__ == "__main__":
    main()
