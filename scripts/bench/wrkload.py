"""The history phase through wrk (C, like pgbench on the PostgreSQL side): a load generator that costs the two cores
as little as the baselines' does. Python's loadgen.py spent ~35 µs of CPU per read, a quarter of a core at 7,000
reads/s, taken from the service it measured. Appends keep loadgen.py: their lifecycles need each order's steps in
order, which wrk's per-thread request() cannot keep per connection.

Every answer is checked: any non-2xx answer or socket error marks the run failed (a 304 cannot happen: no
If-None-Match is sent)."""

import os
import re
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _milliseconds(text):
    value, unit = float(re.match(r"([\d.]+)", text).group(1)), re.sub(r"[\d.]+", "", text)
    return value * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def history(clients, duration, port, token, horders):
    cmd = ["wrk", "-t1", f"-c{clients}", f"-d{duration:g}s", "--latency", "-s", os.path.join(HERE, "history.lua"),
           f"http://127.0.0.1:{port}", "--", token, str(horders)]
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
        "kind": "history", "clients": clients, "seconds": seconds, "requests": requests, "events": requests,
        "requests_per_s": rate, "events_per_s": rate, "p50_ms": percentiles.get("50"), "p99_ms": percentiles.get("99"),
        "mean_ms": None, "statuses": {"200": requests - bad, "other": bad}, "unexpected": bad,
        "failed": bool(problems) or requests == 0, "problems": problems,
        "loadgen_cpu_s": (after.children_user - before.children_user) + (after.children_system - before.children_system),
        "event_loop": "wrk",
    }
