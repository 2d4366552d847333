"""A real two-node Ray cluster for the tests of `workers ray`, inside a network namespace of its own.

What it is (the recipe of issue 31's design note, made private to a test):
- a namespace holder (`unshare --net -- sleep infinity`), `lo` up in it: Ray's processes probe an
  outside address (a UDP connect to 8.8.8.8:53, which fails at once there) and listen on ports a test
  must keep from the machine's other users, so nothing here reaches beyond the namespace's loopback;
- a throwaway MariaDB server in the namespace (a helper process running EmbeddedServer: it prints the
  server's address, password included, on its stdout pipe and stops the server when its stdin
  closes), the BENCH_DSN of every run made with `run`;
- `ray start --head` and one more `ray start --address` node (`add_node` adds another), one CPU each,
  no dashboard, node ip 127.0.0.1, a short temp dir of their own (AF_UNIX socket paths under it must
  stay within 107 bytes, so never a pytest tmp_path).
Every process is started, signalled and found by PID (psutil), never by name: other Ray clusters
and other tests may run on the machine.

Learned while building it (ray 2.60.0):
- `unshare --net -- sleep infinity &` returns before unshare() has run: an `nsenter -t PID -n ip link
  set lo up` made at once sets the *machine's* lo up, and the namespace's stays down. Ray then hangs
  (gRPC to 127.0.0.1 gets ENETUNREACH, retried forever: "Failed to connect to GCS within 5 seconds").
  `_wait_unshared` waits until the holder's /proc/PID/ns/net differs from ours.
- A node may be started as soon as the head's GCS listens (its port in the namespace's
  /proc/PID/net/tcp6: gRPC listens on an IPv6 socket); its `ray start` then waits for the head's
  session. It is no faster on 2 cores (the two starts compete): the node starts after the head.
- Ray's worker processes rename themselves (`ray::IDLE`, `ray::WorkerActor...`): their command line
  no longer names the temp dir. Teardown therefore also kills whatever still runs in the namespace.
- The raylets start their workers with the environment of `ray start`: PYTHONPATH set for a test
  run (a worktree) reaches the actors only because `ray start` is given the test process's own.
- `ray start --block` killed by SIGTERM stops its node in about 1-3 s with
  RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0 (without it, up to 30 s of drain).

Measured on the suite's 2-core machine (`python -m tests.e2e.raycluster` measures again):
- start, both nodes up (DB server beside them): 7.5-8.9 s with the machine otherwise idle, 12-15 s
  under a load average of 3-5 (the head 4.4-7.8 s of it);
- stop, from SIGTERM to nothing left and the temp dir gone: 1.4-2.4 s;
- the idle cluster's CPU, every Ray process of both nodes summed over 10 s: 5.0-5.8 % of one core
  (14 processes; gcs_server ~0.5 %, each raylet and each log monitor ~0.8-0.9 %, the rest less).
  It idles between this module's tests beside the other xdist processes' tests, `alone` ones
  included: that is what it costs them. Its start, the heavy part, runs inside the first test
  that uses it (tests/e2e/test_ray.py), under that test's share of the machine;
- a raylet SIGKILLed: the GCS calls its node dead 5.6 s later (the health checks of `_env`; 11-15 s
  by Ray's defaults); a new node joins in 5-6 s.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = Path(sys.executable).parent
RAY, BENCH = str(BIN / "ray"), str(BIN / "bench")
GCS_PORT = 6379  # the namespace's own: no other cluster can be there
OBJECT_STORE = 80 * 1024 * 1024  # Ray's floor is 75 MiB; the tests put nothing in it

# The DB server of the namespace: its address on stdout, then it lives until stdin closes (or SIGTERM).
_DB_HELPER = """
import asyncio, signal, sys
from bench_dsl.server.embedded import EmbeddedServer
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
srv = EmbeddedServer(max_connections=400)
try:
    asyncio.run(srv.start())
    print(srv.url(), flush=True)
    sys.stdin.read()
finally:
    srv.stop()
"""

# ray.nodes() as JSON, from a driver in the namespace (the GCS's view: a killed node stays "alive"
# there until its health checks fail: some 6 s here, 15 s by Ray's defaults)
_NODES = """
import json, logging, os, sys
import ray
ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False, configure_logging=False, logging_level=logging.ERROR)
print(json.dumps([{"node_id": n["NodeID"], "alive": n["Alive"], "host": n["NodeManagerHostname"],
                   "cpus": n["Resources"].get("CPU", 0), "head": "node:__internal_head__" in n["Resources"]}
                  for n in ray.nodes()]))
ray.shutdown()
"""


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the test process dies, even by kill -9, so that no
    cluster outlives a killed pytest (the holder's sleep dies; `ray start --block` stops its node)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _netns(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


class RayCluster:
    """Start with `start()` (or `with RayCluster() as c:`); `close()` is idempotent and leaves no
    process behind, whatever state the nodes are in. `nodes` and `cpus` (each node's --num-cpus):
    the tests' two nodes of one CPU by default; bench/ray.py starts one node with every core."""

    def __init__(self, nodes: int = 2, cpus: int = 1) -> None:
        self.start_nodes, self.cpus = nodes, cpus
        self.temp: Path | None = None
        self.holder: subprocess.Popen[bytes] | None = None
        self.db: subprocess.Popen[str] | None = None
        self.dsn = ""
        self.nodes: list[subprocess.Popen[bytes]] = []  # `ray start --block` of the head, node 2, ...
        self.address = f"127.0.0.1:{GCS_PORT}"
        self.timings: dict[str, float] = {}

    def __enter__(self) -> RayCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- start ------------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("BENCH_DSN", "RAY_ADDRESS")}
        # a killed node is dead to the GCS after 3 failed checks a second apart (by default 5, 3 s apart:
        # 15 s a test would wait before its next run could place actors on the live nodes only); each
        # check still waits 10 s for an answer, so a node slowed by a busy machine is not called dead
        return env | {"RAY_USAGE_STATS_ENABLED": "0", "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
                      "RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}

    def _in_ns(self, args: Sequence[str]) -> list[str]:
        assert self.holder is not None
        return ["nsenter", "-t", str(self.holder.pid), "-n", *args]  # no -p: nsenter execs the command

    def start(self) -> None:
        t0 = time.monotonic()
        self.temp = Path(tempfile.mkdtemp(prefix="bray-", dir="/tmp"))  # mode 0700; short for the sockets
        self.holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "infinity"], preexec_fn=_die_with_parent)
        self._wait_unshared()
        subprocess.run(self._in_ns(["ip", "link", "set", "lo", "up"]), check=True)
        # the DB server and the head start side by side; the DB's address is read once the head is up
        with open(self.temp / "db.log", "wb") as log:
            self.db = subprocess.Popen(self._in_ns([sys.executable, "-c", _DB_HELPER]), stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT,
                                       start_new_session=True)
        # the second node once the head has started whole: started as soon as the head's GCS listened
        # (`ray start --address` then waits for the head's session), it competed with the head for
        # the 2 cores, and both were up no sooner (9.7-15.1 s against 8.9-12.4 s)
        self.wait_started(self._start_node(head=True), 0)
        self.timings["head_s"] = time.monotonic() - t0
        for i in range(1, self.start_nodes):
            self.wait_started(self._start_node(head=False), i)
        self.timings["nodes_s"] = time.monotonic() - t0
        self.dsn = self._read_dsn()
        self.timings["start_s"] = time.monotonic() - t0

    def add_node(self, wait: bool = True) -> subprocess.Popen[bytes]:
        """One more node (a killed one cannot be restarted cheaply: a new one joins instead). Call it
        from the test's own thread: each node dies with the thread that started it."""
        node = self._start_node(head=False)
        if wait:
            self.wait_started(node, len(self.nodes) - 1)
        return node

    def _start_node(self, head: bool) -> subprocess.Popen[bytes]:
        assert self.temp is not None
        i = len(self.nodes)
        role = (["--head", f"--port={GCS_PORT}", "--include-dashboard=false"] if head
                else [f"--address={self.address}"])
        args = [RAY, "start", *role, "--block", "--node-ip-address=127.0.0.1", f"--num-cpus={self.cpus}",
                f"--object-store-memory={OBJECT_STORE}", f"--min-worker-port={20000 + 100 * i}",
                f"--max-worker-port={20099 + 100 * i}", "--dashboard-agent-listen-port=0", "--disable-usage-stats",
                f"--temp-dir={self.temp}", "--log-style=record", "--log-color=false"]
        with open(self.temp / f"node{i + 1}.log", "wb") as log:
            node = subprocess.Popen(self._in_ns(args), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=self._env(), cwd=self.temp, start_new_session=True,
                                    preexec_fn=_die_with_parent)
        self.nodes.append(node)
        return node

    def _wait_unshared(self) -> None:
        assert self.holder is not None
        mine, deadline = _netns(os.getpid()), time.monotonic() + 10
        while _netns(self.holder.pid) == mine:
            if self.holder.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"unshare --net did not make a namespace (exit {self.holder.returncode})")
            time.sleep(0.005)

    def _wait(self, ready: Callable[[], bool], proc: subprocess.Popen[bytes], what: str, within: float = 90) -> None:
        deadline = time.monotonic() + within
        while not ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start (exit {proc.poll()}):\n{self.log_tail()}")
            time.sleep(0.05)

    def wait_started(self, node: subprocess.Popen[bytes], i: int) -> None:
        assert self.temp is not None
        log = self.temp / f"node{i + 1}.log"
        self._wait(lambda: b"Ray runtime started" in log.read_bytes(), node, f"node {i + 1}")

    def _read_dsn(self) -> str:
        assert self.db is not None and self.db.stdout is not None
        line = self.db.stdout.readline().strip()  # the helper prints it or dies (the DB's own 60 s limit)
        if not line.startswith("mysql://"):
            raise RuntimeError(f"the namespace's DB server did not start:\n{self.log_tail('db.log')}")
        return line

    def log_tail(self, name: str | None = None, lines: int = 15) -> str:
        """The last lines of each log (node1.log is the head's, db.log the DB helper's), for a failure."""
        if self.temp is None:
            return ""
        names = [name] if name else sorted(p.name for p in self.temp.glob("*.log"))
        out = []
        for n in names:
            try:
                out.append(f"--- {n}\n" + "\n".join((self.temp / n).read_text(errors="replace").splitlines()[-lines:]))
            except OSError:
                pass
        return "\n".join(out)

    # -- use --------------------------------------------------------------------------------------

    def run_env(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, "RAY_ADDRESS": self.address, "BENCH_DSN": self.dsn, **(env or {})}

    def run(self, args: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 180,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`args` run in the namespace with RAY_ADDRESS and BENCH_DSN set (the password in the
        environment, never on the command line)."""
        return subprocess.run(self._in_ns(args), capture_output=True, text=True, timeout=timeout,
                              env=self.run_env(env), cwd=cwd or ROOT, stdin=subprocess.DEVNULL)

    def popen(self, args: Sequence[str], env: Mapping[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(self._in_ns(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.run_env(env), cwd=cwd or ROOT, stdin=subprocess.DEVNULL)

    def bench(self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 180,
              cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """The installed `bench` command, as a user runs it, in the namespace."""
        return self.run([BENCH, *args], env=env, timeout=timeout, cwd=cwd)

    def raylets(self) -> dict[int, tuple[str, int]]:
        """Each node's raylet that runs, by the node's number (1: the head): its node id and PID."""
        found = {}
        for i, node in enumerate(self.nodes):
            try:
                kids = psutil.Process(node.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                continue
            for p in kids:
                try:
                    if p.name() == "raylet":
                        arg = next(a for a in p.cmdline() if a.startswith("--node_id="))
                        found[i + 1] = (arg.split("=", 1)[1], p.pid)
                except (psutil.NoSuchProcess, StopIteration):
                    pass
        return found

    def node_ids(self) -> dict[int, str]:
        """The node id of each node whose raylet runs, by the node's number (1: the head)."""
        return {i: node_id for i, (node_id, _) in self.raylets().items()}

    def gcs_nodes(self) -> list[dict[str, object]]:
        """What the GCS says of every node it has known (ray.nodes(): node_id, alive, host, cpus, head)."""
        r = self.run([sys.executable, "-c", _NODES], timeout=60, cwd=self.temp)
        if r.returncode != 0:
            raise RuntimeError(f"ray.nodes() failed ({r.returncode}):\n{r.stderr[-3000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    def wait_alive(self, node_ids: set[str], within: float = 60) -> list[dict[str, object]]:
        """Until the GCS's alive nodes are exactly `node_ids` (a killed node is marked dead once its
        health checks fail: _env)."""
        deadline = time.monotonic() + within
        while True:
            nodes = self.gcs_nodes()
            if {str(n["node_id"]) for n in nodes if n["alive"]} == node_ids:
                return nodes
            if time.monotonic() > deadline:
                raise AssertionError(f"alive nodes are not {sorted(node_ids)}: {nodes}")
            time.sleep(1)

    def kill_raylet(self, node_id: str) -> int:
        """SIGKILL the raylet of node `node_id`, as a machine that dies; its PID."""
        for _, (nid, pid) in self.raylets().items():
            if nid == node_id:
                os.kill(pid, signal.SIGKILL)
                return pid
        raise LookupError(f"no raylet of node {node_id} runs: {self.raylets()}")

    def processes(self) -> list[psutil.Process]:
        """Every process of the cluster: those in the namespace (Ray's workers rename themselves, so
        their command lines no longer name the temp dir) and those whose command line names it."""
        if self.holder is None:
            return []
        try:
            ns: str | None = _netns(self.holder.pid)
        except OSError:
            ns = None
        if ns == _netns(os.getpid()):  # a holder that never unshared: its namespace is everyone's
            ns = None
        found = []
        for p in psutil.process_iter():
            if p.pid == self.holder.pid:
                continue
            try:
                if (ns is not None and _netns(p.pid) == ns) or (
                        self.temp is not None and any(str(self.temp) in a for a in p.cmdline())):
                    found.append(p)
            except (psutil.Error, OSError):
                pass
        return found

    def ray_processes(self) -> list[psutil.Process]:
        """The cluster's processes less the DB server and its helper."""
        db = set()
        if self.db is not None:
            try:
                db = {self.db.pid} | {c.pid for c in psutil.Process(self.db.pid).children(recursive=True)}
            except psutil.NoSuchProcess:
                pass
        return [p for p in self.processes() if p.pid not in db]

    def idle_cpu(self, seconds: float = 10) -> float:
        """The CPU the cluster's Ray processes use over `seconds`, % of one core."""
        procs = self.ray_processes()

        def cpu() -> float:
            total = 0.0
            for p in procs:
                try:
                    t = p.cpu_times()
                    total += t.user + t.system
                except psutil.Error:
                    pass
            return total

        before = cpu()
        time.sleep(seconds)
        return 100 * (cpu() - before) / seconds

    # -- stop -------------------------------------------------------------------------------------

    def close(self) -> None:
        t0 = time.monotonic()
        # the nodes (whichever still run) and the DB server stop side by side
        for node in self.nodes:
            if node.poll() is None:
                node.send_signal(signal.SIGTERM)
        if self.db is not None and self.db.stdin is not None and not self.db.stdin.closed:
            try:
                self.db.stdin.close()
            except OSError:
                pass
        deadline = time.monotonic() + 15
        procs: list[subprocess.Popen[Any]] = [*self.nodes, *([self.db] if self.db else [])]
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.db is not None and self.db.stdout is not None:
            self.db.stdout.close()
        # whatever is left (a node that was SIGKILLed leaves its workers; a raylet's orphans)
        left = self.processes()
        for p in left:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(left, timeout=5)
        if self.holder is not None and self.holder.poll() is None:
            self.holder.kill()
            self.holder.wait()
        if self.temp is not None:
            shutil.rmtree(self.temp, ignore_errors=True)
        self.nodes, self.db, self.holder, self.temp = [], None, None, None
        self.timings["stop_s"] = time.monotonic() - t0


if __name__ == "__main__":  # the figures of the docstring: python -m tests.e2e.raycluster
    with RayCluster() as c:
        print("timings", c.timings, flush=True)
        print("raylets", c.raylets(), flush=True)
        t = time.monotonic()
        print("gcs", c.gcs_nodes(), f"{time.monotonic() - t:.2f}s", flush=True)
        print(f"idle cpu {c.idle_cpu(10):.1f}% of a core over 10 s ({len(c.ray_processes())} processes)", flush=True)
    print("timings", c.timings)
