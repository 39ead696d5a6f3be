"""Shared by the fault scripts: start and stop `ledger serve` on an embedded cluster, post order lifecycles,
query the database over its socket. Standard library only; loopback only.

Environment: LEDGER_BIN (default .build/release/ledger, else .build/debug/ledger).
"""
import glob
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def ledger_binary():
    explicit = os.environ.get("LEDGER_BIN")
    if explicit:
        return explicit
    for candidate in (".build/release/ledger", ".build/debug/ledger"):
        path = os.path.join(REPO, candidate)
        if os.access(path, os.X_OK):
            return path
    fail("no ledger binary: build one (swift build --product ledger) or set LEDGER_BIN")


def pg_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return os.path.dirname(found[-1])
    path = shutil.which("pg_ctl")
    if path:
        return os.path.dirname(path)
    fail("PostgreSQL server binaries not found (apt-get install postgresql)")


class Service:
    """`ledger serve` on 127.0.0.1:`port`: on the embedded cluster in `data_dir`, or, given `service_url`, on that
    database (`owner_url` then names it for the operator's commands and psql)."""

    def __init__(self, data_dir, port, fresh=True, service_url=None, owner_url=None, extra_env=None):
        self.data_dir = data_dir
        self.port = port
        self.binary = ledger_binary()
        self.process = None
        self.log_path = os.path.join(data_dir, "serve.log")
        self.service_url = service_url
        self.owner_url = owner_url
        self.extra_env = extra_env or {}
        if fresh:
            self.stop_cluster()
            shutil.rmtree(data_dir, ignore_errors=True)
        os.makedirs(data_dir, exist_ok=True)

    @property
    def database_url(self):
        return self.owner_url or f"postgres://postgres@/ledger?host={self.data_dir}/run"

    @property
    def pg_data(self):
        return os.path.join(self.data_dir, "pg")

    def env(self):
        env = dict(os.environ)
        env["LEDGER_DATA_DIR"] = self.data_dir
        env.pop("DATABASE_URL", None)
        env.pop("DATABASE_READ_URL", None)
        env.update(self.extra_env)
        return env

    def start(self, timeout=90):
        log = open(self.log_path, "a")
        env = self.env()
        if self.service_url:
            env["DATABASE_URL"] = self.service_url
        self.process = subprocess.Popen(
            [self.binary, "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                fail(f"serve exited with {self.process.returncode}; see {self.log_path}")
            try:
                status, _, _ = request("GET", self.port, "/readyz", timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        fail(f"serve did not become ready in {timeout} s; see {self.log_path}")

    def kill9(self):
        """SIGKILL to the service process only (by pid); the embedded PostgreSQL keeps running."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def pg_ctl(self, *arguments, check=True):
        command = ["runuser", "-u", "postgres", "--", os.path.join(pg_bin(), "pg_ctl"), "-D", self.pg_data, *arguments]
        result = subprocess.run(command, capture_output=True, text=True)
        if check and result.returncode != 0:
            fail(f"{' '.join(command)}: {result.stdout}{result.stderr}")
        return result

    def stop_cluster(self):
        """Stops the embedded cluster when it runs (a restarted service does not own it, so it would not)."""
        if not self.service_url and os.path.exists(os.path.join(self.pg_data, "postmaster.pid")):
            self.pg_ctl("-m", "fast", "-w", "-s", "stop", check=False)

    def ledger(self, *arguments, env=None):
        """Runs a `ledger` subcommand against this database as its owner; returns (exit status, stdout, stderr)."""
        result = subprocess.run(
            [self.binary, *arguments, "--database-url", self.database_url],
            env={**self.env(), **(env or {})}, capture_output=True, text=True, timeout=120)
        return result.returncode, result.stdout, result.stderr

    def create_token(self, name):
        status, out, err = self.ledger("tokens", "create", "--name", name, "--scopes", "events:write,events:read,finance:read")
        if status != 0:
            fail(f"tokens create: {err}")
        return out.strip()

    def psql(self, sql):
        """Rows of a query, as lists of strings (psql unaligned, tab-separated)."""
        result = subprocess.run(
            ["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", self.database_url, "-c", sql],
            capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            fail(f"psql: {result.stderr}")
        return [line.split("\t") for line in result.stdout.splitlines() if line]


def request(method, port, path, body=None, token=None, timeout=10.0):
    """One HTTP request on a fresh connection: (status, headers as a lower-case dict, body bytes).
    Raises OSError for every way the connection can fail, a service killed in the middle of its answer included."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    except http.client.HTTPException as error:  # IncompleteRead, RemoteDisconnected (already an OSError), …
        raise ConnectionError(f"the answer was cut off: {error!r}") from error
    finally:
        connection.close()


def lifecycle(order_id, transaction_id, account_id):
    """The six events of a purchase from creation to finish (README), each with a fresh eventId."""
    product = "gems.100"
    data = [
        ("order.created", {"accountId": account_id, "productId": product, "amount": {"value": 499, "currency": "USD"},
                           "provider": "app_store"}),
        ("payment.queued", {"applicationUsername": account_id}),
        ("receipt.received", {"transactionId": transaction_id, "receipt": "MIIT..."}),
        ("receipt.verified", {"transactionId": transaction_id, "productId": product, "environment": "production",
                              "purchasedAt": "2026-11-22T10:00:00Z"}),
        ("order.granted", {"transactionId": transaction_id, "accountId": account_id, "items": {"gems": 100}}),
        ("order.finished", {}),
    ]
    events = []
    for event_type, event_data in data:
        event_id = str(uuid.uuid4())
        events.append((event_id, json.dumps({"eventId": event_id, "type": event_type, "data": event_data})))
    return events


class Load:
    """`clients` threads posting 6-event lifecycles (`lifecycle`: orders `<prefix><client>-<n>`), one event per
    request, each 2xx logged to `ack_log` as it arrives. A 503 is retried with the same eventId after its Retry-After
    (at most 2 s), a failed connection after 0.5 s, for up to `retry_for` seconds; any other answer is recorded and
    ends that client. A prober polls /readyz every 0.2 s.

    `answers`: (sent at, answered at, status or exception name, Retry-After, error code, order id);
    `readiness`: (sent at, answered at, status or exception name). Read them under `lock`."""

    def __init__(self, port, token, prefix, run, ack_log, clients=8, client_timeout=10.0, retry_for=45.0):
        self.port, self.token, self.prefix, self.run, self.ack_log = port, token, prefix, run, ack_log
        self.clients, self.client_timeout, self.retry_for = clients, client_timeout, retry_for
        self.answers, self.readiness = [], []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = []

    def start(self):
        self.threads = [threading.Thread(target=self.client, args=(n,), daemon=True) for n in range(self.clients)]
        self.threads.append(threading.Thread(target=self.prober, daemon=True))
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=self.client_timeout + 5)

    def acknowledged_since(self, moment):
        """The first 2xx answered to a request sent at or after `moment`: its answer time, or None."""
        with self.lock:
            times = [a[1] for a in self.answers if a[0] >= moment and isinstance(a[2], int) and 200 <= a[2] < 300]
        return min(times, default=None)

    def client(self, number):
        sequence = 0
        while not self.stopping.is_set():
            sequence += 1
            order_id = f"{self.prefix}{number}-{sequence}"
            transaction_id = f"{self.run}{number:03d}{sequence:06d}"
            for event_id, body in lifecycle(order_id, transaction_id, f"acct-{number}"):
                deadline = time.monotonic() + self.retry_for
                while True:
                    sent = time.monotonic()
                    try:
                        status, headers, response = request(
                            "POST", self.port, f"/v1/orders/{order_id}/events", body, self.token, timeout=self.client_timeout)
                    except OSError as error:
                        with self.lock:
                            self.answers.append((sent, time.monotonic(), type(error).__name__, None, None, order_id))
                        if time.monotonic() > deadline or self.stopping.is_set():
                            return
                        time.sleep(0.5)
                        continue
                    code = None
                    if status >= 400:
                        try:
                            code = json.loads(response)["error"]["code"]
                        except (ValueError, KeyError, TypeError):
                            code = "(no JSON error)"
                    with self.lock:
                        self.answers.append((sent, time.monotonic(), status, headers.get("retry-after"), code, order_id))
                    if 200 <= status < 300:
                        self.ack_log.record(event_id, order_id, status)
                        break
                    if status == 503 and time.monotonic() < deadline and not self.stopping.is_set():
                        time.sleep(min(float(headers.get("retry-after", "1") or 1), 2.0))
                        continue
                    return  # anything else is recorded and reported by the script
                if self.stopping.is_set():
                    return  # its order may stay half-way through its lifecycle: every event of it is whole

    def prober(self):
        while not self.stopping.is_set():
            at = time.monotonic()
            try:
                status, _, _ = request("GET", self.port, "/readyz", timeout=self.client_timeout)
            except OSError as error:
                status = type(error).__name__
            with self.lock:
                self.readiness.append((at, time.monotonic(), status))
            time.sleep(0.2)


class AckLog:
    """Every 2xx a client received, one line each, flushed at once: `eventId orderId status`."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.file = open(path, "w")

    def record(self, event_id, order_id, status):
        with self.lock:
            self.file.write(f"{event_id} {order_id} {status}\n")
            self.file.flush()

    def close(self):
        self.file.close()

    @staticmethod
    def read(path):
        with open(path) as file:
            return [line.split() for line in file if line.strip()]


def check_ledger(service, prefix, acknowledged):
    """The database's view of the orders whose ids start with `prefix`: returns a dict of figures and a list of
    problems (empty: every acknowledged event exactly once, no half-written order, verify passed)."""
    problems = []
    rows = service.psql(
        f"SELECT event_id::text, stream_id, type FROM events WHERE kind = 'order' AND stream_id LIKE '{prefix}%'")
    found = {}
    for event_id, order_id, event_type in rows:
        found[event_id] = found.get(event_id, 0) + 1
    per_type = {}
    for _, order_id, event_type in rows:
        per_type[(order_id, event_type)] = per_type.get((order_id, event_type), 0) + 1
    duplicates = sum(count - 1 for count in found.values() if count > 1) + sum(
        count - 1 for count in per_type.values() if count > 1)
    missing = [event_id for event_id in acknowledged if event_id not in found]
    if missing:
        problems.append(f"{len(missing)} acknowledged events are missing, e.g. {missing[:3]}")
    if duplicates:
        problems.append(f"{duplicates} duplicate events")
    half = service.psql(f"""
        SELECT coalesce(o.order_id, e.order_id, s.stream_id), o.version, e.max_version, s.version
        FROM (SELECT stream_id AS order_id, max(version) AS max_version, count(*) AS n FROM events
              WHERE kind = 'order' AND stream_id LIKE '{prefix}%' GROUP BY stream_id) e
        FULL JOIN (SELECT * FROM orders WHERE order_id LIKE '{prefix}%') o ON o.order_id = e.order_id
        FULL JOIN (SELECT * FROM streams WHERE kind = 'order' AND stream_id LIKE '{prefix}%') s
            ON s.stream_id = coalesce(o.order_id, e.order_id)
        WHERE o.version IS DISTINCT FROM e.max_version OR s.version IS DISTINCT FROM e.max_version
           OR e.max_version IS DISTINCT FROM e.n""")
    if half:
        problems.append(f"{len(half)} half-written orders (order, orders.version, max event version, stream version): {half[:3]}")
    orders = service.psql(f"SELECT count(*) FROM orders WHERE order_id LIKE '{prefix}%'")[0][0]
    status, out, err = service.ledger("verify")
    if status != 0:
        problems.append(f"ledger verify exited {status}: {out.strip()} {err.strip()}")
    figures = {"acknowledged": len(acknowledged), "found": len(found), "acknowledged_found": len(acknowledged) - len(missing),
               "duplicates": duplicates, "orders": int(orders), "half_written": len(half),
               "verify": "passed" if status == 0 else f"exit {status}"}
    return figures, problems
