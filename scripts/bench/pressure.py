"""The read-pressure phase (issue 41, item 6): single appends by 16 clients while 16 other clients read whole
1000-event history pages with a new `asOf` each (never from the rendered-page cache). Reads may not starve writes:
16 such readers had cut appends from 3,012 in 15 s to 14. The appends' throughput and p99 are compared with the
same run's appends without readers and with the minimal store's p99 (target: p99 <= 3x the minimal store's)."""

import concurrent.futures
import json
import urllib.request
import uuid

import workload
import wrkload

PAGE = 1000
ORDERS = 16


def preload(port, token, prefix):
    """ORDERS orders `<prefix>1…`, each with PAGE events: the lifecycle up to `verified`, then the same receipt
    resubmitted (the state does not move: docs/domain.md), posted in batches of 100."""
    for k in range(1, ORDERS + 1):
        order = f"{prefix}{k}"
        events = [workload.http_event(step, order) for step in range(4)]
        events += [workload.http_event(2, order) for _ in range(PAGE - len(events))]
        for start in range(0, PAGE, 100):
            body = {"expectedVersion": start, "events": events[start:start + 100]}
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/orders/{order}/events", data=json.dumps(body).encode(), method="POST",
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as answer:
                if answer.status != 201:
                    raise SystemExit(f"preloading {order} for the read-pressure phase: HTTP {answer.status}")


def run(clients, duration, port, token, run_tag):
    """Appends (`clients` single-event writers) and big reads (`clients` readers) at once; both wrk results."""
    prefix = f"big{run_tag}-"
    preload(port, token, prefix)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        reads = pool.submit(wrkload.big_history, clients, duration, port, token, prefix, ORDERS)
        appends = pool.submit(wrkload.appends, "single", clients, duration, port, token, f"{run_tag}7")
        return {"appends": appends.result(), "reads": reads.result(), "page": PAGE}
