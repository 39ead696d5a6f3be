"""The service's phases through wrk (C, like pgbench on the PostgreSQL side): a load generator that costs the two
cores as little as the baselines' does. Python's loadgen.py spent ~35 µs of CPU per history read, and 15–17 % of a
core during the append phases, taken from the service it measured.

- history: as many threads as pgbench has on the baselines' side (one per core), every connection a client reading
  GET /v1/orders/h-<random>/history (history.lua).
- single, batch: one thread per connection (appends.lua), so each thread's Lua state is one client that walks its
  own orders through the lifecycle and sends an order's next event only once the one before was answered.

Every answer is checked: any non-2xx answer or socket error marks the run failed (a 304 cannot happen: no
If-None-Match is sent; a 200 cannot either: every event id is fresh)."""

import json
import os
import re
import subprocess
import time
import uuid

import workload

HERE = os.path.dirname(os.path.abspath(__file__))


def _milliseconds(text):
    value, unit = float(re.match(r"([\d.]+)", text).group(1)), re.sub(r"[\d.]+", "", text)
    return value * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def _event_template(step):
    """Lifecycle event `step` as posted, as a string.format template: %s the event id, then the order id."""
    text = json.dumps({"eventId": "@ID@", "type": workload.LIFECYCLE_TYPES[step],
                       "data": workload.event_data(step, "t-@ORDER@")}, separators=(",", ":"))
    return text.replace("%", "%%").replace("@ID@", "%s").replace("@ORDER@", "%s")


def _wrk(kind, threads, clients, duration, port, script, script_args, events_per_request):
    cmd = ["wrk", f"-t{threads}", f"-c{clients}", f"-d{duration:g}s", "--timeout", "10s", "--latency",
           "-s", os.path.join(HERE, script), f"http://127.0.0.1:{port}", "--", *script_args]
    started = time.monotonic()
    before = os.times()
    out = subprocess.run(cmd, capture_output=True, text=True)
    after = os.times()
    seconds = time.monotonic() - started
    text = out.stdout
    requests = int(re.search(r"(\d+) requests in", text).group(1)) if "requests in" in text else 0
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)) if "Requests/sec" in text else 0.0
    percentiles = {p: _milliseconds(v) for p, v in re.findall(r"^\s+(50|99)%\s+(\S+)", text, re.M)}
    bad = int(re.search(r"Non-2xx or 3xx responses: (\d+)", text).group(1)) if "Non-2xx" in text else 0
    errors = re.search(r"Socket errors: (.*)", text)
    problems = ([f"{bad} non-2xx answers"] if bad else []) + ([f"socket errors: {errors.group(1)}"] if errors else [])
    problems += [out.stderr.strip()] if out.returncode != 0 else []
    return {
        "kind": kind, "clients": clients, "seconds": seconds, "requests": requests,
        "events": requests * events_per_request, "requests_per_s": rate, "events_per_s": rate * events_per_request,
        "p50_ms": percentiles.get("50"), "p99_ms": percentiles.get("99"), "mean_ms": None,
        "statuses": {"2xx": requests - bad, "other": bad}, "unexpected": bad,
        "failed": bool(problems) or requests == 0, "problems": problems,
        "loadgen_cpu_s": (after.children_user - before.children_user) + (after.children_system - before.children_system),
        "event_loop": "wrk",
    }


def loadgen_threads(clients):
    """Threads for a load generator that multiplexes its clients — pgbench's -j on the baselines' side, wrk's -t for
    the service's reads: as many as the cores, at most one per client, on both sides alike (issue 47: the service's
    reads had one wrk thread where the baselines' pgbench had two)."""
    return min(clients, os.cpu_count() or 2)


def history(clients, duration, port, token, horders):
    return _wrk("history", loadgen_threads(clients), clients, duration, port, "history.lua", [token, str(horders)], 1)


def big_history(clients, duration, port, token, prefix, orders):
    """Whole 1000-event pages, each with an asOf never asked before (the read-pressure phase: pressure.py)."""
    return _wrk("big_history", loadgen_threads(clients), clients, duration, port, "big_history.lua", [token, prefix, str(orders)], 1000)


def appends(kind, clients, duration, port, token, run_tag):
    """Single appends or 6-event batches to new orders `<s|b><run_tag>-<clients>-<client>-<serial>`."""
    order_prefix = f"{kind[0]}{run_tag}-{clients}-"
    id_prefix = str(uuid.uuid4())[:18]  # 8-4-4 hex digits, fresh per run; appends.lua adds the client and a counter
    templates = [_event_template(step) for step in range(6)]
    return _wrk(kind, clients, clients, duration, port, "appends.lua",
                [kind, token, order_prefix, id_prefix, *templates], 6 if kind == "batch" else 1)
