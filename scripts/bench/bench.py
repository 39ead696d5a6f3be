#!/usr/bin/env python3
"""The ledger against raw PostgreSQL, side by side in one run (issue 7). Entry point: scripts/bench/run.

1. a PostgreSQL with the schema: the embedded cluster in $LEDGER_BENCH_DIR (default /var/tmp/ledger-bench, wiped),
   or $DATABASE_URL; the raw baseline runs in a sibling database `ledger_bench_raw` of the same cluster;
2. the service's single appends, batches and history reads right after the preload's burst of writes, with no ANALYZE
   and no restart first (how a user finds it; the reads render each page the first time), later compared with the same
   phases after VACUUM ANALYZE;
2.+3. for 16 and 64 clients, back to back, every baseline's statements prepared as the service's are
   (pgbench_mode): pgbench on the minimal event store (minimal.py: the least work PostgreSQL
   needs, database `ledger_bench_min`), pgbench on Message DB installed from its own scripts (messagedb.py, database
   `ledger_bench_mdb`; skipped without them), pgbench replaying the service's own statements (workload.py), then the service
   (`ledger serve`, release build, driven over loopback by wrk — wrkload.py; loadgen.py without wrk, and for the
   preload) for single-event appends, 6-event batches and history reads; every timed phase right after a CHECKPOINT
   (after_checkpoint), so that none inherits the write-back of the ones before it;
3b. single appends by 16 clients while 16 others read 1000-event pages with a fresh asOf each (pressure.py);
4. `ledger rebuild` over >= 1,000,000 events vs `COPY (SELECT … ORDER BY position) TO STDOUT` through psql;
5. one table on stdout, JSON in bench-results/latest.json. Exit status 1 if any phase failed.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import messagedb  # noqa: E402
import minimal  # noqa: E402
import pressure  # noqa: E402
import workload  # noqa: E402
import wrkload  # noqa: E402

PG_BIN = os.environ.get("PG_BIN") or next(
    (p for p in sorted(__import__("glob").glob("/usr/lib/postgresql/*/bin"), reverse=True)), "")
IS_ROOT = os.geteuid() == 0


def log(message):
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def pg_tool(name):
    path = os.path.join(PG_BIN, name)
    return path if os.path.exists(path) else (shutil.which(name) or name)


def sh(cmd, check=True, capture=True, env=None, as_postgres=False, **kw):
    if as_postgres and IS_ROOT:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    kw.setdefault("stdout", subprocess.PIPE if capture else None)
    kw.setdefault("stderr", subprocess.PIPE if capture else None)
    result = subprocess.run(cmd, check=False, text=True, env=env, **kw)
    if check and result.returncode != 0:
        raise SystemExit(f"command failed ({result.returncode}): {' '.join(cmd)}\n{result.stdout or ''}{result.stderr or ''}")
    return result


def psql(url, sql, quiet=True):
    out = sh([pg_tool("psql"), url, "-X", "-v", "ON_ERROR_STOP=1", "-Atq", "-c", sql])
    return out.stdout.strip()


def checkpoint_count(url):
    """Checkpoints the server has started, timed or requested (pg_stat_checkpointer from PostgreSQL 17)."""
    if int(psql(url, "SHOW server_version_num")) >= 170000:
        return int(psql(url, "SELECT num_timed + num_requested FROM pg_stat_checkpointer"))
    return int(psql(url, "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"))


def after_checkpoint(url, run):
    """Runs a timed phase right after a CHECKPOINT (untimed), and records in its result how many checkpoints started
    during it. Every phase of the cluster then starts alike: with nothing of the phases before still to write back,
    and every page it touches first paying its full-page image in the WAL. Without it, the WAL of the phases before
    decided which phase a checkpoint fell on (one of 530 MB at max_wal_size = 1 GB): in stop 37's first run it started
    with the service's single appends and lasted 68 s, the minimal store's phase right before it having none."""
    done = sh([pg_tool("psql"), url, "-X", "-Atq", "-c", "CHECKPOINT"], check=False)
    if done.returncode != 0:
        log(f"CHECKPOINT refused ({done.stderr.strip()}): phases run without one")
    before = checkpoint_count(url)
    result = run()
    result["checkpoints_during"] = checkpoint_count(url) - before
    return result


class MachineCPU:
    """The whole machine's CPU while a load generator runs — load generator, PostgreSQL and service alike: on cores
    the phase keeps busy, what one unit of work costs decides how far one side gets against the other. Taken around
    the generator alone (not the parsing of its logs after it)."""

    def __enter__(self):
        self.busy, self.idle = self._jiffies()
        return self

    def __exit__(self, *exc):
        busy, idle = self._jiffies()
        self.busy_s = (busy - self.busy) / os.sysconf("SC_CLK_TCK")
        self.idle_pct = 100 * (idle - self.idle) / max(1, busy - self.busy + idle - self.idle)

    def record(self, result, seconds):
        """Into a phase's result: µs of the machine's CPU per event (per request for history), and its idle share."""
        done = result["events_per_s"] * seconds
        result["machine_cpu_us_per_event"] = 1e6 * self.busy_s / done if done else None
        result["machine_idle_pct"] = self.idle_pct
        return result

    @staticmethod
    def _jiffies():
        """All cores' busy and idle time so far, in clock ticks (/proc/stat; (0, 0) where there is none)."""
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return 0, 0
        user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
        return user + nice + system + irq + softirq + steal, idle + iowait


def with_database(url, name):
    """The same server URL naming another database."""
    return re.sub(r"^(postgres(?:ql)?://[^/]*/)([^?]*)", lambda m: m.group(1) + name, url)


class Cluster:
    """The embedded cluster, initialised by `ledger migrate`, then kept running by us for the whole run."""

    def __init__(self, ledger, directory):
        self.ledger, self.directory = ledger, directory
        self.url = f"postgres://postgres@/ledger?host={directory}/run"

    def start(self):
        if os.path.exists(self.directory):
            self.stop(quiet=True)
            shutil.rmtree(self.directory)
        os.makedirs(self.directory)
        env = dict(os.environ, LEDGER_DATA_DIR=self.directory)
        env.pop("DATABASE_URL", None)
        sh([self.ledger, "migrate"], env=env)  # initdb, start, create and migrate `ledger`, stop
        sh([pg_tool("pg_ctl"), "-D", f"{self.directory}/pg", "-l", f"{self.directory}/pg/server.log", "-w", "-s", "start"],
           as_postgres=True)

    def stop(self, quiet=False):
        if os.path.exists(f"{self.directory}/pg/postmaster.pid"):
            sh([pg_tool("pg_ctl"), "-D", f"{self.directory}/pg", "-m", "fast", "-w", "-s", "stop"], check=not quiet,
               as_postgres=True)


class Service:
    def __init__(self, ledger, url, port, log_path, arguments=()):
        self.ledger, self.url, self.port, self.log_path = ledger, url, port, log_path
        self.arguments = list(arguments)
        self.process = None

    def start(self):
        env = dict(os.environ, LOG_LEVEL=os.environ.get("BENCH_LOG_LEVEL", "warning"))
        self.log_file = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [self.ledger, "serve", "--port", str(self.port), "--database-url", self.url] + self.arguments,
            stdout=self.log_file, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"ledger serve exited with {self.process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1) as response:
                    if response.status == 200:
                        return
            except Exception:
                pass
            time.sleep(0.2)
        raise SystemExit(f"ledger serve did not become ready; see {self.log_path}")

    def reset_peak_rss(self):
        try:
            with open(f"/proc/{self.process.pid}/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current RSS
            return True
        except OSError:
            return False

    def status(self):
        values = {}
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS"):
                    values[key] = int(value.split()[0]) / 1024  # MB
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        values["cpu_s"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return values

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def pgbench_mode():
    """How pgbench sends the baselines' statements: `prepared` (named, parsed and planned once per connection), as
    the service runs its own hot statements (issue 47: with `extended`, the default before, every baseline statement
    was parsed and planned again on each call, more work than the service does, and the ratios flattered the service).
    BENCH_PGBENCH_MODE=extended gives the old method, to compare with figures measured by it."""
    return os.environ.get("BENCH_PGBENCH_MODE", "prepared")


def run_pgbench(url, script_text, kind, clients, duration, variables, workdir, name="raw"):
    script = os.path.join(workdir, f"{name}-{kind}.sql")
    with open(script, "w") as f:
        f.write(script_text)
    logdir = tempfile.mkdtemp(prefix=f"pgbench-{kind}-{clients}-", dir=workdir)
    os.chmod(logdir, 0o777)
    cmd = [pg_tool("pgbench"), "-n", "-M", pgbench_mode(),
           "-c", str(clients), "-j", str(wrkload.loadgen_threads(clients)), "-T", str(int(duration)),
           "-l", f"--log-prefix={logdir}/tx", "-f", script]
    for key, value in variables.items():
        cmd += ["-D", f"{key}={value}"]
    cmd.append(url)
    with MachineCPU() as cpu:
        result = sh(cmd, check=False)
    output = (result.stdout or "") + (result.stderr or "")
    latencies = []
    for name in os.listdir(logdir):
        with open(os.path.join(logdir, name)) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[2].isdigit():
                    latencies.append(int(fields[2]) / 1000.0)  # µs → ms
    shutil.rmtree(logdir, ignore_errors=True)
    latencies.sort()
    tps = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", output)
    failed_tx = re.search(r"number of failed transactions: (\d+)", output)
    per_request = 6 if kind == "batch" else 1
    tps = float(tps.group(1)) if tps else 0.0
    failed = result.returncode != 0 or tps == 0 or (failed_tx and int(failed_tx.group(1)) > 0)
    if failed:
        log(f"pgbench {kind} x{clients} FAILED:\n{output[-2000:]}")
    return cpu.record({
        "requests_per_s": tps, "events_per_s": tps * per_request, "requests": len(latencies),
        "p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99),
        "mean_ms": sum(latencies) / len(latencies) if latencies else None, "failed": bool(failed),
    }, int(duration))


def run_loadgen(kind, clients, duration, port, token, run_tag, horders):
    if kind != "preload" and shutil.which("wrk"):
        with MachineCPU() as cpu:
            data = (wrkload.history(clients, duration, port, token, horders) if kind == "history"
                    else wrkload.appends(kind, clients, duration, port, token, run_tag))
        cpu.record(data, data["seconds"])
        if data["failed"]:
            log(f"service {kind} x{clients} FAILED: {data['problems']}")
        return data
    cmd = [sys.executable, os.path.join(HERE, "loadgen.py"), "--kind", kind, "--clients", str(clients),
           "--duration", str(duration), "--port", str(port), "--token", token, "--run", run_tag,
           "--horders", str(horders)]
    result = sh(cmd, check=False)
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise SystemExit(f"loadgen {kind} produced no result:\n{result.stdout}\n{result.stderr}")
    if data["failed"]:
        log(f"service {kind} x{clients} FAILED: statuses {data['statuses']}; {data['problems']}")
    return data


def release_ledger():
    """The release `ledger` ($LEDGER_BIN, else .build-release's), built first when it is missing."""
    ledger = os.environ.get("LEDGER_BIN") or os.path.join(ROOT, ".build-release", "release", "ledger")
    if not os.path.exists(ledger):
        log("building the release binary (swift build -c release --product ledger --scratch-path .build-release)")
        sh(["swift", "build", "-c", "release", "--product", "ledger", "--scratch-path", ".build-release"],
           cwd=ROOT, capture=False)
    return ledger


def serve_with_history(ledger, url, log_path, name, history_orders):
    """A token for the load, `ledger serve` on a free port, then the orders h-1…h-<history_orders> written through it
    for the history reads. Returns (service, port, token, run_tag); the caller stops the service."""
    run_tag = str(int(time.time()) % 100000)
    token = sh([ledger, "tokens", "create", "--name", f"{name}-{run_tag}", "--scopes", "events:write,events:read",
                "--database-url", url]).stdout.strip().splitlines()[-1].strip()
    port = free_port()
    service = Service(ledger, url, port, log_path)
    service.start()
    log(f"writing {history_orders} orders through the service for the history reads")
    if run_loadgen("preload", 16, 0, port, token, run_tag, history_orders)["failed"]:
        service.stop()
        raise SystemExit("preloading the history orders failed")
    return service, port, token, run_tag


def save_and_exit(results, path):
    """Writes the run's JSON; exit status 1 if any phase had an unexpected answer."""
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
    sys.exit(1 if results["failed"] else 0)


def top_up(url, events, tag):
    """Adds copies of the service-written lifecycle of order h-1 under new order ids `<tag>-N` (their streams too)
    until the log holds at least `events` events, then VACUUM ANALYZE; returns the count. Copies keep h-1's hashes
    (the projections are not written: `ledger rebuild` makes them)."""
    have = int(psql(url, "SELECT count(*) FROM events"))
    extra_orders = max(0, -(-(events - have) // 6))
    log(f"loading {extra_orders * 6} more events ({have} present) by INSERT … SELECT")
    started = time.time()
    chunk = 50_000
    for first in range(1, extra_orders + 1, chunk):
        last = min(extra_orders, first + chunk - 1)
        psql(url, f"""
            INSERT INTO streams (kind, stream_id, version, last_hash)
            SELECT 'order', '{tag}-' || g, 6,
                   (SELECT hash FROM events WHERE kind = 'order' AND stream_id = 'h-1' AND version = 6)
            FROM generate_series({first}, {last}) g;
            INSERT INTO events (kind, stream_id, version, event_id, type, data, metadata, occurred_at, recorded_at, canonical, hash)
            SELECT 'order', '{tag}-' || g, e.version, gen_random_uuid(), e.type,
                   CASE WHEN e.data ? 'transactionId'
                        THEN jsonb_set(e.data, '{{transactionId}}', to_jsonb('t-{tag}-' || g)) ELSE e.data END,
                   e.metadata, e.occurred_at, e.recorded_at, e.canonical, e.hash
            FROM generate_series({first}, {last}) g CROSS JOIN (SELECT * FROM events WHERE kind = 'order' AND stream_id = 'h-1') e
            ORDER BY g, e.version""")
    psql(url, "VACUUM ANALYZE")
    total = int(psql(url, "SELECT count(*) FROM events"))
    log(f"{total} events in the log ({time.time() - started:.0f} s)")
    return total


def machine():
    memory = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) // 1024
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"nproc": os.cpu_count(), "cpu": cpu, "memory_mb": memory, "kernel": platform.release()}


def fmt(value, digits=1):
    if value is None:
        return "-"
    if isinstance(value, float) and value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def ratio(a, b):
    return (a / b) if (a is not None and b) else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: 10 s phases, 100k events for rebuild")
    parser.add_argument("--duration", type=float, help="seconds per phase (default 15; --quick 10)")
    parser.add_argument("--clients", default="16,64", help="comma-separated client counts (default 16,64; '' for the rebuild alone)")
    parser.add_argument("--rebuild-events", type=int, help="events for the rebuild (default 1,000,000; --quick 100,000)")
    parser.add_argument("--history-orders", type=int, help="orders h-1…h-N read by the history phase (default 5000)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench-results"))
    args = parser.parse_args()
    duration = args.duration or (10 if args.quick else 15)
    rebuild_events = args.rebuild_events or (100_000 if args.quick else 1_000_000)
    horders = args.history_orders or (2000 if args.quick else 5000)
    client_counts = [int(c) for c in args.clients.split(",") if c.strip()]

    if client_counts and not shutil.which("wrk"):
        # Said first and in the table: Python's load generator takes a share of the two cores from the service it
        # measures (stop 39's first run on a new machine had no wrk, and its history phase did 0.7x of the same
        # build's with wrk), so such a run's figures do not compare with the ones in BENCHMARKS.md.
        log("WARNING: wrk not found (apt-get install wrk): the service is driven by loadgen.py, which takes CPU from "
            "it; these figures do not compare with runs driven by wrk")

    ledger = release_ledger()
    os.makedirs(args.out, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="run-", dir=args.out)
    os.chmod(workdir, 0o755)
    run_tag = str(int(time.time()) % 100000)

    cluster = None
    if os.environ.get("DATABASE_URL"):
        url = os.environ["DATABASE_URL"]
        sh([ledger, "migrate", "--database-url", url])
    else:
        directory = os.environ.get("LEDGER_BENCH_DIR", "/var/tmp/ledger-bench")
        log(f"starting the embedded cluster in {directory}")
        cluster = Cluster(ledger, directory)
        cluster.start()
        url = cluster.url
    raw_url = with_database(url, "ledger_bench_raw")
    min_url = with_database(url, "ledger_bench_min")
    service = None
    results = {"pairs": [], "failed": False}
    try:
        psql(url, "DROP DATABASE IF EXISTS ledger_bench_raw")
        psql(url, "CREATE DATABASE ledger_bench_raw")
        sh([ledger, "migrate", "--database-url", raw_url])
        psql(url, "DROP DATABASE IF EXISTS ledger_bench_min")
        psql(url, "CREATE DATABASE ledger_bench_min")
        psql(min_url, minimal.SCHEMA)
        mdb_url = with_database(url, messagedb.DATABASE) if messagedb.available() else None
        if mdb_url:
            psql(url, f"DROP DATABASE IF EXISTS {messagedb.DATABASE}")
            psql(url, f"CREATE DATABASE {messagedb.DATABASE}")
            psql(url, f"ALTER DATABASE {messagedb.DATABASE} SET search_path = message_store, public")
            sh([pg_tool("psql"), mdb_url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", os.path.join(messagedb.DIRECTORY, "install.sql")])
        else:
            log(f"Message DB's scripts are not in {messagedb.DIRECTORY} (MESSAGE_DB_DIR): its column stays empty")
        pg_version = psql(url, "SHOW server_version")
        settings = psql(url, "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings "
                             "WHERE name IN ('shared_buffers','synchronous_commit','fsync','max_connections','wal_level')")

        token = sh([ledger, "tokens", "create", "--name", f"bench-{run_tag}", "--scopes", "events:write,events:read",
                    "--database-url", url]).stdout.strip().splitlines()[-1].strip()
        token_hash = hashlib.sha256(token.encode()).hexdigest()
        psql(raw_url, f"INSERT INTO api_tokens (name, secret_hash, scopes) VALUES "
                      f"('bench', decode('{token_hash}', 'hex'), '{{events:write,events:read}}')")
        log(f"raw database: preloading {horders} orders for history reads")
        sh([pg_tool("psql"), raw_url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", workload.preload_history_sql(horders)])
        sh([pg_tool("psql"), min_url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", minimal.preload_history_sql(horders)])
        if mdb_url:
            sh([pg_tool("psql"), mdb_url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", messagedb.preload_history_sql(horders)])

        port = int(os.environ.get("BENCH_PORT") or free_port())
        service = Service(ledger, url, port, os.path.join(args.out, "serve.log"))
        log(f"starting ledger serve on port {port}")
        service.start()
        log(f"service: preloading {horders} orders for history reads (batches, 16 clients; also the warm-up)")
        preload = run_loadgen("preload", 16, 0, port, token, run_tag, horders)
        if preload["failed"]:
            raise SystemExit("preloading history orders through the service failed")
        # The service as a user finds it after a burst (issue 23 C): the preload's events went through a pool whose
        # statements were planned on an empty database, and nothing is analysed or restarted before this phase. The
        # history reads then find no page rendered yet (issue 47: histories "as found after a burst of writes").
        burst_clients = client_counts[0] if client_counts else 16
        results["burst"] = {}
        for kind in ["single", "batch", "history"]:
            log(f"{kind} x{burst_clients}: service right after the burst, no ANALYZE and no restart, {duration:.0f} s")
            svc = after_checkpoint(url, lambda: run_loadgen(kind, burst_clients, duration, port, token, f"{run_tag}9", horders))
            results["burst"][kind] = {"clients": burst_clients, "service": svc}
            results["failed"] |= svc["failed"]
        psql(url, "VACUUM ANALYZE")
        psql(raw_url, "VACUUM ANALYZE")
        psql(min_url, "VACUUM ANALYZE")
        if mdb_url:
            psql(mdb_url, "VACUUM ANALYZE")

        scripts = {"single": workload.pgbench_single_event(), "batch": workload.pgbench_batch(),
                   "history": workload.pgbench_history()}
        minimal_scripts = {"single": minimal.pgbench_single_event(), "batch": minimal.pgbench_batch(),
                           "history": minimal.pgbench_history()}
        variables = {"run": run_tag, "tokhash": token_hash, "n": 0, "horders": horders}
        for clients in client_counts:
            for kind in ["single", "batch", "history"]:
                variables["phase"] = len(results["pairs"])
                log(f"{kind} x{clients}: pgbench, minimal store, {duration:.0f} s")
                least = after_checkpoint(url, lambda: run_pgbench(
                    min_url, minimal_scripts[kind], kind, clients, duration, variables, workdir, "minimal"))
                peer = None
                if mdb_url:
                    log(f"{kind} x{clients}: pgbench, Message DB, {duration:.0f} s")
                    peer = after_checkpoint(url, lambda: run_pgbench(
                        mdb_url, messagedb.pgbench_scripts()[kind], kind, clients, duration, {"horders": horders}, workdir,
                        "messagedb"))
                log(f"{kind} x{clients}: pgbench, the service's statements, {duration:.0f} s")
                raw = after_checkpoint(url, lambda: run_pgbench(raw_url, scripts[kind], kind, clients, duration, variables, workdir))
                log(f"{kind} x{clients}: service {duration:.0f} s")
                service.reset_peak_rss()
                before = service.status()
                svc = after_checkpoint(url, lambda: run_loadgen(kind, clients, duration, port, token, run_tag, horders))
                after = service.status()
                svc["peak_rss_mb"] = after["VmHWM"]
                svc["service_cpu_pct"] = 100 * (after["cpu_s"] - before["cpu_s"]) / svc["seconds"]
                svc["loadgen_cpu_pct"] = 100 * svc["loadgen_cpu_s"] / svc["seconds"]
                requests = svc["requests_per_s"] * svc["seconds"]
                svc["cpu_ms_per_1000_requests"] = (
                    1_000_000 * (after["cpu_s"] - before["cpu_s"]) / requests if requests else None)
                pair = {"workload": kind, "clients": clients, "minimal": least, "raw": raw, "service": svc, "peer": peer,
                        "peer_ratio": ratio(svc["events_per_s"], peer["events_per_s"]) if peer else None,
                        "minimal_ratio": ratio(svc["events_per_s"], least["events_per_s"]),
                        "minimal_p99_ratio": ratio(svc["p99_ms"], least["p99_ms"]),
                        "throughput_ratio": ratio(svc["events_per_s"], raw["events_per_s"]),
                        "p99_ratio": ratio(svc["p99_ms"], raw["p99_ms"])}
                results["pairs"].append(pair)
                results["failed"] |= least["failed"] or raw["failed"] or svc["failed"] or bool(peer and peer["failed"])
                log(f"  minimal {fmt(least['events_per_s'])} ev/s p99 {fmt(least['p99_ms'], 2)} ms | raw "
                    f"{fmt(raw['events_per_s'])} ev/s p99 {fmt(raw['p99_ms'], 2)} ms | service "
                    f"{fmt(svc['events_per_s'])} ev/s p99 {fmt(svc['p99_ms'], 2)} ms, RSS {fmt(svc['peak_rss_mb'])} MB "
                    f"| ratio vs minimal {fmt(pair['minimal_ratio'], 2)}, vs raw {fmt(pair['throughput_ratio'], 2)}"
                    + (f", vs Message DB {fmt(pair['peer_ratio'], 2)} ({fmt(peer['events_per_s'])}/s)" if peer else ""))
        for kind, burst in results.get("burst", {}).items():
            analysed = next((p for p in results["pairs"] if p["workload"] == kind and p["clients"] == burst["clients"]), None)
            burst["vs_analysed"] = ratio(burst["service"]["events_per_s"], analysed["service"]["events_per_s"]) if analysed else None
        results["service_peak_rss_mb"] = max((p["service"]["peak_rss_mb"] for p in results["pairs"]), default=None)
        alone = next((p for p in results["pairs"] if p["workload"] == "single" and p["clients"] == 16), None)
        if alone and shutil.which("wrk"):
            log(f"single x16 while 16 clients read 1000-event pages with a fresh asOf: service {duration:.0f} s")
            under = after_checkpoint(url, lambda: pressure.run(16, duration, port, token, run_tag))
            appends = under["appends"]
            under["vs_alone"] = ratio(appends["events_per_s"], alone["service"]["events_per_s"])
            under["p99_vs_minimal"] = ratio(appends["p99_ms"], alone["minimal"]["p99_ms"])
            under["minimal_p99_ms"] = alone["minimal"]["p99_ms"]
            results["pressure"] = under
            results["failed"] |= appends["failed"] or under["reads"]["failed"]
            log(f"  appends {fmt(appends['events_per_s'])} ev/s p99 {fmt(appends['p99_ms'], 2)} ms "
                f"({fmt(under['vs_alone'], 2)} of alone) | reads {fmt(under['reads']['requests_per_s'])} pages/s")
        service.stop()

        # 4. rebuild over >= rebuild_events events: copy the service's own h-1 lifecycle under new order ids.
        total = top_up(url, rebuild_events, f"r{run_tag}")
        psql(url, "CHECKPOINT")  # the top-up's WAL written back before the timing, not during the rebuild
        copy_sql = f"COPY (SELECT {workload.EVENT_COLUMNS} FROM events ORDER BY position) TO STDOUT"
        sh([pg_tool("psql"), url, "-X", "-q", "-c", copy_sql], capture=False, stdout=subprocess.DEVNULL)  # warm-up
        started = time.perf_counter()
        copy = sh([pg_tool("psql"), url, "-X", "-q", "-c", copy_sql], check=False, capture=False, stdout=subprocess.DEVNULL)
        copy_seconds = time.perf_counter() - started
        log(f"rebuild: COPY {copy_seconds:.2f} s; running ledger rebuild")
        started = time.perf_counter()
        rebuild = subprocess.Popen([ledger, "rebuild", "--database-url", url], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(rebuild.pid, 0)
        rebuild_seconds = time.perf_counter() - started
        rebuild_out = rebuild.stdout.read() + rebuild.stderr.read()
        rebuild_ok = os.waitstatus_to_exitcode(status) == 0
        rebuilt_orders = int(psql(url, "SELECT count(*) FROM orders"))
        streams = int(psql(url, "SELECT count(*) FROM streams"))
        if not rebuild_ok or rebuilt_orders != streams:
            log(f"rebuild FAILED ({rebuilt_orders} orders for {streams} streams): {rebuild_out[-2000:]}")
            rebuild_ok = False
        results["rebuild"] = {
            "events": total, "copy_seconds": copy_seconds, "copy_events_per_s": total / copy_seconds,
            "copy_failed": copy.returncode != 0,
            "rebuild_seconds": rebuild_seconds, "rebuild_events_per_s": total / rebuild_seconds,
            "rebuild_reported": rebuild_out.strip().splitlines()[-1] if rebuild_out.strip() else "",
            "rebuild_peak_rss_mb": usage.ru_maxrss / 1024, "failed": (not rebuild_ok) or copy.returncode != 0,
        }
        results["rebuild"]["ratio"] = results["rebuild"]["rebuild_events_per_s"] / results["rebuild"]["copy_events_per_s"]
        results["failed"] |= results["rebuild"]["failed"]
    finally:
        if service:
            service.stop()
        if cluster and not args.keep:
            cluster.stop(quiet=True)

    results.update({
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full", "seconds_per_phase": duration, "history_orders": horders,
        "machine": machine(), "postgres": pg_version, "postgres_settings": settings,
        "pgbench_mode": pgbench_mode(),
        "service_log_level": os.environ.get("BENCH_LOG_LEVEL", "warning"),
        "loadgen_event_loop": results["pairs"][0]["service"]["event_loop"] if results["pairs"] else None,
    })
    results["targets"] = targets(results)
    print(table(results))
    with open(os.path.join(args.out, "latest.json"), "w") as f:
        json.dump(results, f, indent=2)
    shutil.rmtree(workdir, ignore_errors=True)
    log(f"wrote {os.path.join(args.out, 'latest.json')}" + ("; RUN FAILED" if results["failed"] else ""))
    sys.exit(1 if results["failed"] else 0)


def targets(results):
    """Issue 47's targets, against the minimal store and Message DB in the same run (each work at each client count:
    >= 0.5x the minimal store, >= 1.5x Message DB for appends and >= 1.0x for history reads, p99 <= 2.5x the minimal
    store's), then the earlier issues' that still hold: the burst, read pressure, the rebuild, memory."""
    out = []

    def add(name, figure, met):
        out.append({"target": name, "figure": figure, "met": bool(met) if met is not None else None})

    works = {"single": "single-event appends", "batch": "6-event batches", "history": "history reads"}
    for p in results["pairs"]:
        r, clients, work = p["minimal_ratio"], p["clients"], works[p["workload"]]
        if r is None:
            continue
        add(f"{work} >= 0.5x the minimal store ({clients} clients)", f"{r:.2f}x", r >= 0.5)
        least_vs_peer = 1.0 if p["workload"] == "history" else 1.5
        if p.get("peer_ratio") is not None:
            add(f"{work} >= {least_vs_peer:.1f}x Message DB ({clients} clients)",
                f"{p['peer_ratio']:.2f}x ({p['service']['events_per_s']:,.0f} vs {p['peer']['events_per_s']:,.0f}/s)",
                p["peer_ratio"] >= least_vs_peer)
        r99 = p["minimal_p99_ratio"]
        add(f"{work}: p99 <= 2.5x the minimal store's ({clients} clients)",
            f"{p['service']['p99_ms']:.2f} ms vs {p['minimal']['p99_ms']:.2f} ms = {r99:.2f}x" if r99 else "-",
            r99 is not None and r99 <= 2.5)
    for kind, burst in results.get("burst", {}).items():
        r = burst.get("vs_analysed")
        add(f"{works[kind]} right after a burst (no ANALYZE, no restart) within 20 % of the analysed run "
            f"({burst['clients']} clients)",
            f"{burst['service']['events_per_s']:,.0f}/s = {r:.2f}x" if r else "-", r is not None and r >= 0.8)
    under = results.get("pressure")
    if under:
        add("single appends' p99 <= 3x the minimal store's while 16 clients read 1000-event pages (16 clients)",
            f"{under['appends']['p99_ms']:.2f} ms vs {under['minimal_p99_ms']:.2f} ms = {under['p99_vs_minimal']:.2f}x, "
            f"{under['appends']['events_per_s']:,.0f} events/s ({under['vs_alone']:.2f}x of alone)",
            under["p99_vs_minimal"] is not None and under["p99_vs_minimal"] <= 3)
    rb = results.get("rebuild")
    if rb:
        add("rebuild >= 200,000 events/s and >= 0.5x COPY",
            f"{rb['rebuild_events_per_s']:,.0f} events/s, {rb['ratio']:.2f}x COPY ({rb['copy_events_per_s']:,.0f}/s)",
            rb["rebuild_events_per_s"] >= 200_000 and rb["ratio"] >= 0.5)
    rss = [p["service"]["peak_rss_mb"] for p in results["pairs"] if p["clients"] == 64]
    if rss:
        add("service RSS <= 150 MB under 64 clients", f"{max(rss):.0f} MB", max(rss) <= 150)
    return out


def machine_cpu_table(results):
    """The whole machine's CPU per event (per request for history) on each side, load generator and PostgreSQL
    included: on two busy cores the ratio of throughputs follows the inverse ratio of these."""
    def cost(side):
        return (side or {}).get("machine_cpu_us_per_event")

    rows = ["| workload | clients | machine CPU µs: minimal | Message DB | raw | service | service / minimal | idle %: minimal / service |",
            "|---|---|---|---|---|---|---|---|"]
    for p in results["pairs"]:
        least, svc = p["minimal"], p["service"]
        rows.append(
            f"| {p['workload']} | {p['clients']} | {fmt(cost(least), 0)} | {fmt(cost(p.get('peer')), 0)} | "
            f"{fmt(cost(p['raw']), 0)} | {fmt(cost(svc), 0)} | {fmt(ratio(cost(svc), cost(least)), 2)} | "
            f"{fmt(least.get('machine_idle_pct'), 0)} / {fmt(svc.get('machine_idle_pct'), 0)} |")
    return rows


def table(results):
    lines = []
    head = ("| workload | clients | minimal /s | minimal p99 ms | Message DB /s | Message DB p99 ms | raw /s | raw p99 ms "
            "| service /s | service p50 ms | service p99 ms | service RSS MB | service CPU % | CPU ms / 1000 req "
            "| vs minimal /s | vs minimal p99 | vs Message DB /s | vs raw /s | vs raw p99 |")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for p in results["pairs"]:
        least, raw, svc, peer = p["minimal"], p["raw"], p["service"], p.get("peer") or {}
        unit = "req" if p["workload"] == "history" else "ev"
        flag = " FAILED" if least["failed"] or raw["failed"] or svc["failed"] or peer.get("failed") else ""
        lines.append(
            f"| {p['workload']}{flag} | {p['clients']} | {fmt(least['events_per_s'])} {unit} | {fmt(least['p99_ms'], 2)} | "
            f"{fmt(peer.get('events_per_s'))} | {fmt(peer.get('p99_ms'), 2)} | "
            f"{fmt(raw['events_per_s'])} {unit} | {fmt(raw['p99_ms'], 2)} | {fmt(svc['events_per_s'])} {unit} | "
            f"{fmt(svc['p50_ms'], 2)} | {fmt(svc['p99_ms'], 2)} | {fmt(svc['peak_rss_mb'], 0)} | "
            f"{fmt(svc['service_cpu_pct'], 0)} | {fmt(svc['cpu_ms_per_1000_requests'], 0)} | "
            f"{fmt(p['minimal_ratio'], 2)} | {fmt(p['minimal_p99_ratio'], 2)} | {fmt(p.get('peer_ratio'), 2)} | "
            f"{fmt(p['throughput_ratio'], 2)} | {fmt(p['p99_ratio'], 2)} |")
    for kind, burst in results.get("burst", {}).items():
        svc = burst["service"]
        lines.append(
            f"| {kind} after a burst{' FAILED' if svc['failed'] else ''} | {burst['clients']} | - | - | - | - | - | - | "
            f"{fmt(svc['events_per_s'])} ev | {fmt(svc['p50_ms'], 2)} | {fmt(svc['p99_ms'], 2)} | - | - | - | "
            f"{fmt(burst.get('vs_analysed'), 2)} of the analysed run | - | - | - | - |")
    under = results.get("pressure")
    if under:
        svc, reads = under["appends"], under["reads"]
        lines.append(
            f"| single under read pressure{' FAILED' if svc['failed'] or reads['failed'] else ''} | 16 | - | "
            f"{fmt(under['minimal_p99_ms'], 2)} | - | - | - | - | {fmt(svc['events_per_s'])} ev | {fmt(svc['p50_ms'], 2)} | "
            f"{fmt(svc['p99_ms'], 2)} | - | - | - | {fmt(under['vs_alone'], 2)} of alone | {fmt(under['p99_vs_minimal'], 2)} "
            f"| - | - | - |")
        lines.append(
            f"| 1000-event pages, fresh asOf, beside it | 16 | - | - | - | - | - | - | {fmt(reads['requests_per_s'])} req "
            f"| {fmt(reads['p50_ms'], 2)} | {fmt(reads['p99_ms'], 2)} | - | - | - | - | - | - | - | - |")
    rb = results.get("rebuild")
    if rb:
        lines.append(
            f"| rebuild{' FAILED' if rb['failed'] else ''} ({rb['events']:,} events) | 1 | {fmt(rb['copy_events_per_s'])} ev "
            f"(COPY, {rb['copy_seconds']:.2f} s) | - | - | - | - | - | {fmt(rb['rebuild_events_per_s'])} ev ({rb['rebuild_seconds']:.2f} s) "
            f"| - | - | {fmt(rb['rebuild_peak_rss_mb'], 0)} | - | - | {fmt(rb['ratio'], 2)} | - | - | - | - |")
    lines += [""] + machine_cpu_table(results)
    lines.append("")
    lines.append("/s: events per second for appends and rebuild (a batch is 6 events), requests per second for history; "
                 "latencies per request (per pgbench transaction for the baselines). minimal: the least work PostgreSQL "
                 "needs (scripts/bench/minimal.py); Message DB: its write_message / get_stream_messages through pgbench "
                 "(messagedb.py); raw: the service's own statements replayed (workload.py). Every phase starts right "
                 "after a CHECKPOINT.")
    during = [f"{p['workload']} x{p['clients']} {side}" for p in results["pairs"]
              for side in ("minimal", "peer", "raw", "service") if (p.get(side) or {}).get("checkpoints_during")]
    during += [f"{kind} after a burst" for kind, burst in results.get("burst", {}).items()
               if burst["service"].get("checkpoints_during")]
    lines.append(f"Phases a checkpoint started in: {', '.join(during) if during else 'none'}.")
    driver = results.get("loadgen_event_loop")
    if driver and driver != "wrk":
        lines.append(f"The service was driven by loadgen.py ({driver}), not wrk: it took CPU from the service, so these "
                     "figures do not compare with runs driven by wrk.")
    lines.append("")
    for t in results.get("targets", []):
        lines.append(f"- {'MET    ' if t['met'] else 'NOT MET'} {t['target']}: {t['figure']}")
    lines.append("")
    lines.append("RUN FAILED (unexpected statuses or errors; see above)" if results["failed"] else "run OK: every response as expected")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
