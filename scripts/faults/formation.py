"""A pg_auto_failover formation on this machine, for the failover fault script: a monitor and two PostgreSQL nodes,
each with its engine agent (`pg_autoctl run`), on loopback, trusting local connections, run as the `postgres` user
(PostgreSQL refuses root). Standard library only.

The monitor's health checks are shortened (a check every second, a node unhealthy after 5 s; the defaults take about
20 s) and so is the time the monitor gives a lost primary to demote itself (10 s, the default 30 s), with the nodes'
network-partition timeout below it (5 s, the default 20 s), as docs/operating.md describes: the new primary takes
writes only once the old one must have stopped.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import time

from faultlib import fail, pg_bin

MONITOR_SETTINGS = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "5000",
    "pgautofailover.primary_demote_timeout": "10000",
}
NETWORK_PARTITION_TIMEOUT = "5"


def pg_autoctl_binary():
    found = shutil.which("pg_autoctl")
    if not found:
        fail("pg_autoctl not found: apt-get install postgresql-15-auto-failover (pg_auto_failover)")
    return found


# Below Linux's ephemeral ports (32768-60999 by default): a port in that range may be a connection's local port on
# 127.0.0.1 when PostgreSQL binds it, and PostgreSQL then listens on IPv6 alone, leaving 127.0.0.1 unanswered (the
# monitor once did not answer for two minutes while its agent said it served; 55400 was its port).
DEFAULT_BASE_PORT = 25400


class Formation:
    """The monitor on `base_port`, the nodes on the next ports, all under `base_dir`."""

    def __init__(self, base_dir, base_port=DEFAULT_BASE_PORT, nodes=2, database="ledger"):
        self.base_dir = base_dir
        self.monitor_port = base_port
        self.node_ports = [base_port + 1 + n for n in range(nodes)]
        self.database = database
        self.runs = {}  # pgdata -> Popen of its `pg_autoctl run`

    def pgdata(self, name):
        return os.path.join(self.base_dir, name)

    @property
    def monitor_dir(self):
        return self.pgdata("monitor")

    def node_names(self):
        return [f"node{n + 1}" for n in range(len(self.node_ports))]

    def env(self):
        env = dict(os.environ)
        env["PATH"] = f"{pg_bin()}:{env.get('PATH', '')}"
        env["XDG_CONFIG_HOME"] = os.path.join(self.base_dir, "config")
        env["XDG_DATA_HOME"] = os.path.join(self.base_dir, "share")
        return env

    @property
    def log_path(self):
        """Every `pg_autoctl` command's output, beside the formation (which `destroy` removes): for a failed run."""
        return os.path.join(os.path.dirname(self.base_dir), "pg_autoctl.log")

    def pg_autoctl(self, *arguments, check=True, timeout=120, attempts=1):
        """Runs `pg_autoctl` as postgres. A `create` is resumable (it carries on from the state it left), so one that
        failed may be run again: seen once on a new CI machine, a standby's initialisation gave up after its
        supervisor had restarted it five times within 50 s, and the same command succeeds when run again."""
        command = ["runuser", "-u", "postgres", "--", pg_autoctl_binary(), *arguments]
        for attempt in range(1, attempts + 1):
            result = subprocess.run(command, env=self.env(), capture_output=True, text=True, timeout=timeout)
            with open(self.log_path, "a") as log:
                log.write(f"$ pg_autoctl {' '.join(arguments)}  (exit {result.returncode})\n{result.stdout}{result.stderr}\n")
            if result.returncode == 0 or not check:
                return result
            if attempt < attempts:
                print(f"--- pg_autoctl {arguments[0]} {arguments[1]} failed (exit {result.returncode}), running it again "
                      f"(attempt {attempt + 1} of {attempts}; output in {self.log_path})")
                time.sleep(2)
        fail(f"{' '.join(arguments)}: {result.stdout[-2000:]}{result.stderr[-2000:]} (all output: {self.log_path})")

    def agent_log_path(self, name):
        """An agent's output, beside the formation as `log_path` is: `destroy` must not take it with it."""
        return os.path.join(os.path.dirname(self.base_dir), f"pg_autoctl-run-{name}.log")

    def run(self, name):
        """Starts the engine's agent for `name` (which starts and supervises its PostgreSQL)."""
        log = open(self.agent_log_path(name), "a")
        self.runs[name] = subprocess.Popen(
            ["runuser", "-u", "postgres", "--", pg_autoctl_binary(), "run", "--pgdata", self.pgdata(name)],
            env=self.env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def create(self):
        self.destroy()
        os.makedirs(self.base_dir)
        for kept in [self.log_path, *glob.glob(self.agent_log_path("*"))]:
            if os.path.exists(kept):
                os.remove(kept)
        shutil.chown(self.base_dir, "postgres", "postgres")
        common = ["--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl", "--pgctl", os.path.join(pg_bin(), "pg_ctl")]
        self.pg_autoctl("create", "monitor", "--pgdata", self.monitor_dir, "--pgport", str(self.monitor_port), *common)
        self.run("monitor")
        monitor_answers = lambda: self.psql(self.monitor_port, "SELECT 1", database="pg_auto_failover", check=False) == [["1"]]
        # Seen once on a CI run: the monitor's agent started and its PostgreSQL never answered. Its agent is started
        # once more before the run is failed (the output of both: `agent_log_path`).
        if not self.answered(monitor_answers, 60):
            print(f"--- the monitor did not answer within 60 s: its agent started again (output in "
                  f"{self.agent_log_path('monitor')})\n{self.why_unanswered(self.monitor_port, 'monitor')}")
            self.kill9("monitor")
            time.sleep(1)  # its backends leave with the postmaster
            self.run("monitor")
        self.wait_for(monitor_answers, 60, "the monitor")
        for name, value in MONITOR_SETTINGS.items():
            self.psql(self.monitor_port, f"ALTER SYSTEM SET {name} = {value}", database="pg_auto_failover")
        self.psql(self.monitor_port, "SELECT pg_reload_conf()", database="pg_auto_failover")
        monitor_uri = f"postgres://autoctl_node@127.0.0.1:{self.monitor_port}/pg_auto_failover?sslmode=disable"
        for name, port in zip(self.node_names(), self.node_ports):
            self.pg_autoctl(
                "create", "postgres", "--pgdata", self.pgdata(name), "--pgport", str(port), "--listen", "127.0.0.1",
                "--name", name, "--dbname", self.database, "--monitor", monitor_uri, *common, timeout=180, attempts=3)
            self.pg_autoctl("config", "set", "--pgdata", self.pgdata(name), "timeout.network_partition_timeout",
                            NETWORK_PARTITION_TIMEOUT)
            self.run(name)
            # One node at a time: the second is made a standby of the first.
            self.wait_for(lambda: self.settled(), 120, f"{name} to join")

    def state(self):
        """The monitor's view: {name: (reported state, assigned state, port)}."""
        result = self.pg_autoctl("show", "state", "--pgdata", self.monitor_dir, "--json", check=False, timeout=10)
        if result.returncode != 0:
            return {}
        try:
            nodes = json.loads(result.stdout)
        except ValueError:
            return {}
        return {n["nodename"]: (n["current_group_state"], n["assigned_group_state"], n["nodeport"]) for n in nodes}

    def settled(self):
        """One primary, every other node a secondary, each where the monitor wants it."""
        state = self.state()
        reported = sorted(current for current, assigned, _ in state.values() if current == assigned)
        return len(reported) == len(state) and (reported == ["single"] or
                                               reported == ["primary"] + ["secondary"] * (len(state) - 1))

    def writable(self, port):
        """Whether the node on `port` takes writes now (out of recovery and not read-only)."""
        rows = self.psql(
            port, "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'", check=False)
        return rows == [["t"]]

    def primary_port(self):
        """The port of the node taking writes, or None."""
        for port in self.node_ports:
            if self.writable(port):
                return port
        return None

    def node_on(self, port):
        return self.node_names()[self.node_ports.index(port)]

    def uri(self, user):
        """The formation's URL as `pg_autoctl show uri` prints it, with the role to connect as."""
        result = self.pg_autoctl("show", "uri", "--pgdata", self.monitor_dir, "--formation", "default")
        uri = result.stdout.strip()
        if not uri.startswith("postgres://"):
            fail(f"pg_autoctl show uri printed {uri!r}")
        return f"{uri}&user={user}"

    def kill9(self, name):
        """kill -9 of the node's engine agent and of its PostgreSQL (the postmaster; its backends follow it). Returns
        once the agent's process is gone: an agent started again refuses to run while its pid file names a process
        that exists, and a killed one exists until it is reaped (seen: "An instance of pg_autoctl is already
        running" a second after the kill)."""
        run = self.runs.get(name)
        if run and run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        pid_file = os.path.join(self.pgdata(name), "postmaster.pid")
        if os.path.exists(pid_file):
            with open(pid_file) as file:
                pid = int(file.readline().strip())
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        agent = self.agent_pid(name)
        if agent is not None:
            self.answered(lambda: not os.path.exists(f"/proc/{agent}"), 10)

    def agent_pid(self, name):
        """The pid in the agent's pid file (`pg_autoctl` keeps it under /tmp/pg_autoctl/<pgdata>), or None."""
        try:
            with open(f"/tmp/pg_autoctl{self.pgdata(name)}/pg_autoctl.pid") as file:
                return int(file.readline().strip())
        except (OSError, ValueError):
            return None

    def why_unanswered(self, port, name):
        """What a probe of `port` says, and the end of the server's log: for a node that does not answer."""
        probe = subprocess.run(
            ["psql", "-X", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", "postgres", "-c", "SELECT 1"],
            capture_output=True, text=True, timeout=30, env={**self.env(), "PGCONNECT_TIMEOUT": "2"})
        logs = sorted(glob.glob(os.path.join(self.pgdata(name), "log", "*")), key=os.path.getmtime)
        tail = open(logs[-1], errors="replace").read()[-3000:] if logs else "(no server log)"
        listening = (subprocess.run(["ss", "-tanp", f"sport = :{port}"], capture_output=True, text=True).stdout
                     if shutil.which("ss") else "(no ss)")
        return f"probe: exit {probe.returncode} {probe.stderr.strip()}\nsockets on {port}:\n{listening}\nserver log:\n{tail}"

    def switchover(self):
        self.pg_autoctl("perform", "switchover", "--pgdata", self.monitor_dir, timeout=180)

    def destroy(self):
        """Kills whatever a formation under `base_dir` runs (this one's, or a previous run's), then removes it."""
        for run in self.runs.values():
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
                run.wait()
        subprocess.run(["pkill", "-9", "-f", f"pg_autoctl run --pgdata {self.base_dir}/"], capture_output=True)
        for pid_file in glob.glob(os.path.join(self.base_dir, "*", "postmaster.pid")):
            try:
                with open(pid_file) as file:
                    os.kill(int(file.readline().strip()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        time.sleep(0.5)  # the killed postmasters' backends leave their shared memory
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def psql(self, port, sql, database=None, check=True):
        result = subprocess.run(
            ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
             "-d", database or self.database, "-c", sql],
            capture_output=True, text=True, timeout=30,
            # The probes only: a node that does not answer must not blind the watch for long. The engine's own
            # commands keep libpq's default.
            env={**self.env(), "PGCONNECT_TIMEOUT": "2"})
        if result.returncode != 0:
            if check:
                fail(f"psql on {port}: {result.stderr}")
            return None
        return [line.split("|") for line in result.stdout.splitlines() if line]

    @staticmethod
    def answered(condition, timeout):
        """Whether `condition` held within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            time.sleep(0.3)
        return False

    @classmethod
    def wait_for(cls, condition, timeout, what):
        if not cls.answered(condition, timeout):
            fail(f"timed out after {timeout} s waiting for {what}")
