#!/usr/bin/env python3
"""HTTP load generator for the ledger service: N keep-alive connections over loopback, each one client that waits
for its answer before sending the next request (closed loop, no pipelining). Every answer's status is checked:
one unexpected status marks the run failed.

Kinds:
  single   6-event lifecycles posted event by event (each a fresh eventId), one new order after another; expects 201
  batch    each lifecycle as one batch {"expectedVersion":0,"events":[…6…]}; expects 201
  history  GET /v1/orders/h-<random 1…horders>/history; expects 200
  preload  posts h-1…h-<horders> as batches (for history), then stops; expects 201

Prints one JSON object: requests, events, seconds, latencies (p50/p99/mean ms), statuses, failed, cpu seconds.
"""

import argparse
import asyncio
import json
import random
import resource
import sys
import time

import workload

try:
    import uvloop  # optional: a cheaper event loop leaves more of the 2 cores to the service
except ImportError:
    uvloop = None


class Failed(Exception):
    pass


class Connection:
    def __init__(self, host, port, token):
        self.host, self.port = host, port
        self.auth = b"Authorization: Bearer " + token.encode() + b"\r\n"
        self.reader = self.writer = None

    async def open(self):
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def request(self, method, path, body=None):
        head = [method.encode(), b" ", path.encode(), b" HTTP/1.1\r\nHost: bench\r\n", self.auth]
        if body is not None:
            head += [b"Content-Type: application/json\r\nContent-Length: ", str(len(body)).encode(), b"\r\n"]
        head.append(b"\r\n")
        if body is not None:
            head.append(body)
        self.writer.write(b"".join(head))
        header = await self.reader.readuntil(b"\r\n\r\n")
        status = int(header[9:12])
        length = None
        chunked = False
        for line in header.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            payload = b"".join(parts)
        else:
            payload = await self.reader.readexactly(length or 0)
        return status, payload


async def run(args):
    loop_deadline = time.monotonic() + args.duration
    latencies = []          # ns per request
    statuses = {}
    problems = []
    counts = {"requests": 0, "events": 0}
    budget = [args.max_requests]
    preload_next = [1]

    def record(status, expected, payload, started, events):
        latencies.append(time.perf_counter_ns() - started)
        statuses[status] = statuses.get(status, 0) + 1
        counts["requests"] += 1
        if status != expected:
            if len(problems) < 5:
                problems.append(f"{status}: {payload[:300].decode(errors='replace')}")
        else:
            counts["events"] += events

    def more():
        if args.kind != "preload" and time.monotonic() >= loop_deadline:
            return False
        if budget[0] is not None:
            if budget[0] <= 0:
                return False
            budget[0] -= 1
        return True

    async def client(index):
        conn = Connection(args.host, args.port, args.token)
        await conn.open()
        serial = 0
        try:
            while True:
                if args.kind == "preload":
                    k = preload_next[0]
                    if k > args.horders:
                        return
                    preload_next[0] += 1
                    started = time.perf_counter_ns()
                    status, payload = await conn.request("POST", f"/v1/orders/h-{k}/events", workload.http_batch_body(f"h-{k}"))
                    record(status, 201, payload, started, 6)
                elif args.kind == "history":
                    if not more():
                        return
                    k = random.randint(1, args.horders)
                    started = time.perf_counter_ns()
                    status, payload = await conn.request("GET", f"/v1/orders/h-{k}/history")
                    record(status, 200, payload, started, 1)
                elif args.kind == "batch":
                    if not more():
                        return
                    order_id = f"b{args.run}-{args.clients}-{index}-{serial}"
                    serial += 1
                    body = workload.http_batch_body(order_id)
                    started = time.perf_counter_ns()
                    status, payload = await conn.request("POST", f"/v1/orders/{order_id}/events", body)
                    record(status, 201, payload, started, 6)
                else:  # single: a lifecycle event by event; a refusal ends that order
                    order_id = f"s{args.run}-{args.clients}-{index}-{serial}"
                    serial += 1
                    for step in range(6):
                        if not more():
                            return
                        body = workload.http_single_body(step, order_id)
                        started = time.perf_counter_ns()
                        status, payload = await conn.request("POST", f"/v1/orders/{order_id}/events", body)
                        record(status, 201, payload, started, 1)
                        if status != 201:
                            break
        finally:
            conn.writer.close()

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    results = await asyncio.gather(*(client(i) for i in range(args.clients)), return_exceptions=True)
    seconds = time.monotonic() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    for result in results:
        if isinstance(result, BaseException):
            if len(problems) < 5:
                problems.append(f"client error: {result!r}")
            statuses["exception"] = statuses.get("exception", 0) + 1
    latencies.sort()

    def pct(p):
        if not latencies:
            return None
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] / 1e6

    expected = {"history": 200}.get(args.kind, 201)
    unexpected = sum(n for s, n in statuses.items() if s != expected)
    return {
        "kind": args.kind, "clients": args.clients, "seconds": seconds,
        "requests": counts["requests"], "events": counts["events"],
        "requests_per_s": counts["requests"] / seconds if seconds else 0,
        "events_per_s": counts["events"] / seconds if seconds else 0,
        "p50_ms": pct(0.50), "p99_ms": pct(0.99),
        "mean_ms": (sum(latencies) / len(latencies) / 1e6) if latencies else None,
        "statuses": {str(k): v for k, v in statuses.items()}, "unexpected": unexpected,
        "failed": unexpected > 0 or counts["requests"] == 0, "problems": problems,
        "loadgen_cpu_s": (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime),
        "event_loop": "uvloop" if uvloop else "asyncio",
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", choices=["single", "batch", "history", "preload"], required=True)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds (not for preload)")
    parser.add_argument("--max-requests", type=int, default=None, help="stop after this many requests")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=18080)
    parser.add_argument("--token", required=True)
    parser.add_argument("--run", default=str(int(time.time())), help="tag that makes order ids unique per run")
    parser.add_argument("--horders", type=int, default=1000, help="orders h-1…h-N (history, preload)")
    args = parser.parse_args()
    if uvloop:
        uvloop.install()
    result = asyncio.run(run(args))
    json.dump(result, sys.stdout)
    print()
    sys.exit(1 if result["failed"] else 0)


if __name__ == "__main__":
    main()
