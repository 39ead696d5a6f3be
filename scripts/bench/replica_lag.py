#!/usr/bin/env python3
"""How far a streaming replica lags while the ledger is written (issue 16). Entry point: scripts/bench/replica-lag.

One embedded cluster ($LEDGER_LAG_DIR, default /var/tmp/ledger-lag, wiped) and a `pg_basebackup -R` standby of it on
a socket of its own (the same set-up as EmbeddedPostgres.startStandby), one `ledger serve` (release) with
DATABASE_READ_URL naming the standby, the load generator of scripts/bench/run at 16 clients: single-event appends,
6-event batches, then history reads (which the service sends to the replica). While each phase runs, the primary's
own measure of the lag is sampled every 100 ms: `pg_stat_replication.replay_lag` (the time from flushing WAL on the
primary to the standby having replayed it; NULL, counted as 0, when the standby has nothing left to replay) and the
bytes of WAL not yet replayed. Prints one table; writes bench-results/replica-lag.json.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import (ROOT, IS_ROOT, Cluster, log, machine, percentile, pg_tool, release_ledger,  # noqa: E402
                   run_loadgen, save_and_exit, serve_with_history, sh)

HISTORY_ORDERS = 2000
LAG_QUERY = ("SELECT COALESCE(EXTRACT(epoch FROM replay_lag) * 1000, 0), "
             "pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn) FROM pg_stat_replication")


class Standby:
    """A physical streaming standby of `primary`, started read-only on its own socket directory."""

    def __init__(self, primary, directory):
        self.primary, self.directory = primary, directory
        self.url = f"postgres://postgres@/ledger?host={directory}/run"

    def start(self):
        if os.path.exists(self.directory):
            self.stop()
            shutil.rmtree(self.directory)
        for folder in (self.directory, f"{self.directory}/run"):
            os.makedirs(folder, mode=0o700)
            if IS_ROOT:
                shutil.chown(folder, "postgres", "postgres")
        sh([pg_tool("pg_basebackup"), "-D", f"{self.directory}/pg", "-h", f"{self.primary.directory}/run",
            "-U", "postgres", "-R", "-X", "stream", "-c", "fast"], as_postgres=True)
        with open(f"{self.directory}/pg/postgresql.conf", "a") as conf:
            conf.write(f"\nunix_socket_directories = '{self.directory}/run'\nhot_standby = on\nhot_standby_feedback = on\n")
        sh([pg_tool("pg_ctl"), "-D", f"{self.directory}/pg", "-l", f"{self.directory}/server.log", "-w", "-s", "start"],
           as_postgres=True)

    def stop(self):
        if os.path.exists(f"{self.directory}/pg/postmaster.pid"):
            sh([pg_tool("pg_ctl"), "-D", f"{self.directory}/pg", "-m", "fast", "-w", "-s", "stop"], check=False,
               as_postgres=True)


class LagSampler:
    """psql's `\\watch 0.1` on the primary, its rows collected until `stop()`."""

    def __init__(self, url):
        self.samples = []
        self.process = subprocess.Popen([pg_tool("psql"), url, "-X", "-Atq", "-F", "|"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.process.stdin.write(f"{LAG_QUERY}\n\\watch 0.1\n")
        self.process.stdin.flush()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.process.stdout:
            parts = line.strip().split("|")
            if len(parts) == 2 and parts[0]:
                self.samples.append((float(parts[0]), int(float(parts[1] or 0))))

    def stop(self):
        self.process.terminate()
        self.process.wait()
        self.reader.join(timeout=5)
        lags, lag_bytes = sorted(s[0] for s in self.samples), sorted(s[1] for s in self.samples)
        return {"samples": len(lags), "lag_ms_p50": percentile(lags, 0.5), "lag_ms_p99": percentile(lags, 0.99),
                "lag_ms_max": lags[-1] if lags else None, "lag_bytes_p50": percentile(lag_bytes, 0.5),
                "lag_bytes_max": lag_bytes[-1] if lag_bytes else None}


def replica_state(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as response:
        return json.loads(response.read()).get("replicas")


def served_by(port, token):
    """Who answers a history read: `serve` names the replica (or `primary`) in `Ledger-Read-From`."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/orders/h-1/history",
                                     headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers.get("Ledger-Read-From")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=15, help="seconds per phase")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench-results"))
    args = parser.parse_args()
    ledger = release_ledger()
    os.makedirs(args.out, exist_ok=True)
    directory = os.environ.get("LEDGER_LAG_DIR", "/var/tmp/ledger-lag")
    cluster = Cluster(ledger, f"{directory}/primary")
    standby = Standby(cluster, f"{directory}/standby")
    service = None
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), "clients": args.clients,
               "seconds_per_phase": args.duration, "runs": [], "failed": False}
    try:
        os.makedirs(directory, exist_ok=True)
        log(f"starting the embedded cluster and its standby in {directory}")
        cluster.start()
        standby.start()
        os.environ["DATABASE_READ_URL"] = standby.url  # what `serve` reads its replicas from
        service, port, token, run_tag = serve_with_history(
            ledger, cluster.url, os.path.join(args.out, "replica-lag-serve.log"), "lag", HISTORY_ORDERS)
        for kind in ("single", "batch", "history"):
            log(f"{kind} x{args.clients}, {args.duration:.0f} s, sampling the replica's lag")
            sampler = LagSampler(cluster.url)
            data = run_loadgen(kind, args.clients, args.duration, port, token, run_tag, HISTORY_ORDERS)
            run = {"kind": kind, "requests_per_s": data["requests_per_s"], "p99_ms": data["p99_ms"], **sampler.stop(),
                   "replicas": replica_state(port)}
            results["failed"] |= data["failed"]
            results["runs"].append(run)
        results["history_served_by"] = served_by(port, token)
    finally:
        if service:
            service.stop()
        standby.stop()
        cluster.stop(quiet=True)

    print("| work (16 clients) | requests /s | p99 ms | lag samples | replay lag p50 ms | p99 ms | max ms "
          "| WAL behind p50 bytes | max bytes | replica after the phase |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for run in results["runs"]:
        state = ", ".join(f"{r.get('name')} {r.get('state')}" for r in run["replicas"] or [])
        print(f"| {run['kind']} | {run['requests_per_s']:,.0f} | {run['p99_ms']:.2f} | {run['samples']} "
              f"| {run['lag_ms_p50']:.1f} | {run['lag_ms_p99']:.1f} | {run['lag_ms_max']:.1f} "
              f"| {run['lag_bytes_p50']:,} | {run['lag_bytes_max']:,} | {state} |")
    print(f"history reads served by: {results.get('history_served_by')}")
    save_and_exit(results, os.path.join(args.out, "replica-lag.json"))


if __name__ == "__main__":
    main()
