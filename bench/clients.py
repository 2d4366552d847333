"""The two clients under comparison, run the same way: sysbench 1.0 and bench-dsl, same server,
same tables, same users, same warm-up and measured time. Each run yields a Measure: throughput, p95,
errors, and the CPU the client, the server and the whole machine spent inside the measured window.

The measured window is found in each client's own output, not guessed from the clock:
- sysbench 1.0 has no warm-up option, so it runs warm-up + duration with `--report-checkpoints` at
  the end of the warm-up: the checkpoint resets its counters, and its final report covers the
  measured part only. The window opens at the checkpoint line and closes at the final report.
- bench-dsl streams its events (`--jsonl -`): the window opens at the `hold` phase and closes at the
  `step` event; the figures come from its JSON result's summary, which covers the hold only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.procs import Child, PeakMemory, Snapshot, Usage, snapshot, usage

# The bench-dsl that `import bench_dsl` finds from a neutral directory: the installed one (this
# repository's, editable, in .venv), or another version through PYTHONPATH to compare two engines.
BENCH_CMD = [sys.executable, "-m", "bench_dsl.cli.main"]


@dataclass(frozen=True)
class Target:
    """Where both clients connect. The password, if any, is only ever passed to the clients."""

    host: str
    port: int
    user: str
    password: str
    database: str
    socket: str | None
    server_pid: int | None
    embedded: bool

    def url(self, database: str | None = None) -> str:
        auth = self.user + (f":{self.password}" if self.password else "")
        where = f"{self.host}:{self.port}" if self.socket is None else "localhost"
        query = f"?socket={self.socket}" if self.socket else ""
        return f"mysql://{auth}@{where}/{database or self.database}{query}"

    def redacted(self, database: str | None = None) -> str:
        return self.url(database).replace(f":{self.password}@", ":***@") if self.password else self.url(database)

    def sysbench_args(self, database: str | None = None) -> list[str]:
        where = ([f"--mysql-socket={self.socket}"] if self.socket
                 else [f"--mysql-host={self.host}", f"--mysql-port={self.port}"])
        return ["--db-driver=mysql", *where, f"--mysql-user={self.user}", f"--mysql-password={self.password}",
                f"--mysql-db={database or self.database}"]


@dataclass
class Measure:
    """One run of one client at one point."""

    client: str  # "sysbench" | "bench-dsl"
    label: str
    users: int
    ok: bool = False
    error: str | None = None
    tps: float | None = None
    qps: float | None = None
    p95_ms: float | None = None
    count: int = 0
    errors: int = 0
    seconds: float | None = None
    usage: Usage | None = None
    rss_peak: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cpu_per_10k(self) -> float | None:
        """Client CPU seconds (user + system, whole process tree) per 10,000 transactions.

        The CPU rate comes from the harness's window and the count from the client's own, which
        differ by the few milliseconds a line takes to arrive: rate x the client's own seconds
        keeps the two consistent whichever window is longer."""
        if self.usage is None or not self.count or not self.seconds:
            return None
        return self.usage.client_cores * self.seconds / self.count * 10_000

    def to_json(self) -> dict[str, Any]:
        return {"client": self.client, "label": self.label, "users": self.users, "ok": self.ok, "error": self.error,
                "tps": _round(self.tps, 2), "qps": _round(self.qps, 2), "p95_ms": self.p95_ms, "count": self.count,
                "errors": self.errors, "seconds": _round(self.seconds, 3),
                "client_cpu_s_per_10k_tx": _round(self.cpu_per_10k, 4),
                "usage": self.usage.to_json() if self.usage else None, "rss_peak_bytes": self.rss_peak,
                **({"extra": self.extra} if self.extra else {})}


def _round(v: float | None, nd: int) -> float | None:
    return None if v is None else round(v, nd)


# sysbench ---------------------------------------------------------------------------------------

_SB_TX = re.compile(r"^\s*transactions:\s+(\d+)\s+\(([\d.]+) per sec\.\)", re.MULTILINE)
_SB_Q = re.compile(r"^\s*queries:\s+(\d+)\s+\(([\d.]+) per sec\.\)", re.MULTILINE)
_SB_IGN = re.compile(r"^\s*ignored errors:\s+(\d+)", re.MULTILINE)
_SB_PCT = re.compile(r"^\s*(\d+)th percentile:\s+([\d.]+)", re.MULTILINE)
_SB_RECONNECTS = re.compile(r"^\s*reconnects:\s+(\d+)", re.MULTILINE)


def parse_sysbench_report(text: str) -> dict[str, float | int]:
    """The figures of one sysbench 1.0 report block ("SQL statistics:" ... "Threads fairness:")."""
    tx, q, pct = _SB_TX.search(text), _SB_Q.search(text), _SB_PCT.search(text)
    if tx is None or q is None:
        raise ValueError("no 'transactions:' / 'queries:' lines in sysbench's report")
    out: dict[str, float | int] = {"count": int(tx.group(1)), "tps": float(tx.group(2)),
                                   "queries": int(q.group(1)), "qps": float(q.group(2))}
    if pct is not None:
        out[f"p{pct.group(1)}_ms"] = float(pct.group(2))
    if (ign := _SB_IGN.search(text)) is not None:
        out["ignored_errors"] = int(ign.group(1))
    if (rc := _SB_RECONNECTS.search(text)) is not None:
        out["reconnects"] = int(rc.group(1))
    return out


def sysbench_cmd(target: Target, test: str, tables: int, table_size: int, users: int, warmup: int,
                 duration: int, command: str = "run", database: str | None = None) -> list[str]:
    cmd = ["sysbench", test, *target.sysbench_args(database), f"--tables={tables}", f"--table-size={table_size}"]
    if command == "run":
        cmd += [f"--threads={users}", f"--time={warmup + duration}", "--percentile=95", "--histogram=off"]
        if warmup:
            cmd.append(f"--report-checkpoints={warmup}")
    return [*cmd, command]


def run_sysbench(target: Target, test: str, tables: int, table_size: int, users: int, warmup: int,
                 duration: int, workdir: Path, sample_rss: bool = False) -> Measure:
    label = f"{test}@{users}"
    m = Measure("sysbench", label, users)
    child = Child(sysbench_cmd(target, test, tables, table_size, users, warmup, duration), workdir / "sysbench.err")
    start: Snapshot | None = None
    end: Snapshot | None = None
    rss = PeakMemory(child.pid) if sample_rss else None
    final: list[str] = []
    # Without a warm-up the window opens when the threads have started; with one, at the checkpoint,
    # whose own report block is then skipped ("SQL statistics:" comes twice: checkpoint, final).
    opener = "Checkpoint report:" if warmup else "Threads started!"
    stats_blocks = 0
    in_final = False
    out_lines: list[str] = []
    for line in child.lines(time.monotonic() + warmup + duration + 60 + users / 10):
        out_lines.append(line)
        if start is None and opener in line:
            start = snapshot(child.pid, target.server_pid)
            if rss is not None:
                rss.start()
            continue
        if start is not None and line.startswith("SQL statistics:"):
            stats_blocks += 1
            if stats_blocks == (2 if warmup else 1):
                end = snapshot(child.pid, target.server_pid)
                in_final = True
        if in_final:
            final.append(line)
    if rss is not None:
        m.rss_peak = rss.stop()
    code = child.wait()
    if code != 0 or start is None or end is None or not final:
        why = "" if code != 0 else f"no '{opener}' line or no final report in its output"
        m.error = f"sysbench exit {code}{': ' + why if why else ''}: " + (child.stderr_tail()
                                                                       or "\n".join(out_lines[-10:]))
        return m
    try:
        fig = parse_sysbench_report("\n".join(final))
    except ValueError as exc:
        m.error = str(exc)
        return m
    m.ok = True
    m.tps, m.qps, m.count = float(fig["tps"]), float(fig["qps"]), int(fig["count"])
    m.p95_ms = float(fig["p95_ms"]) if "p95_ms" in fig else None
    m.seconds = m.count / m.tps if m.tps else None
    m.usage = usage(start, end)
    # sysbench retries deadlocks and the like (its --mysql-ignore-errors), as bench-dsl does: those are
    # retries, not errors. A real error ends sysbench with a non-zero status, handled above.
    m.extra = {"ignored_errors": fig.get("ignored_errors", 0), "reconnects": fig.get("reconnects", 0)}
    return m


# bench-dsl --------------------------------------------------------------------------------------

def bench_file(name: str, target: Target, workload: str, users: int, warmup: int, duration: int, seed: int,
               workers: str | None, database: str | None = None) -> str:
    """A .bench scenario for one measured run. A password stays out of the file: env() reads it."""
    tline = (f'target "{target.url(database)}"' if not target.password
             else f'target env("{dsn_var(database or target.database)}")')
    lines = [f'scenario "{name}" {{', f"  {tline}", f"  seed {seed}", f"  {workload}", f"  users {users}"]
    if warmup:
        lines.append(f"  warmup {warmup}s")
    lines.append(f"  duration {duration}s")
    if workers is not None:
        lines.append(f"  workers {workers}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def sysbench_workload(test: str, tables: int, table_size: int) -> str:
    return f"workload sysbench {test} {{ tables = {tables}  table_size = {table_size} }}"


def dsn_var(database: str) -> str:
    return "BENCH_HARNESS_DSN_" + re.sub(r"\W", "_", database).upper()


# The databases the harness uses beside the target's own: sysbench's scratch copy, TPC-C's two.
SUFFIXES = ("", "_sbcheck", "_tpcc", "_tpcc_sp")


def bench_env(target: Target) -> dict[str, str]:
    """The clients' environment: with a password, one variable per database holds the address."""
    env = dict(os.environ)
    env.pop("BENCH_DSN", None)  # the generated files name their target; nothing else may redirect them
    if target.password:
        for suffix in SUFFIXES:
            env[dsn_var(target.database + suffix)] = target.url(target.database + suffix)
    return env


def bench_check(path: Path, env: dict[str, str]) -> tuple[bool, str]:
    """`bench check FILE`: does this bench-dsl accept the file (e.g. a `workers` line)?"""
    r = subprocess.run([*BENCH_CMD, "check", str(path)], check=False, capture_output=True, text=True,
                       env=env, cwd=path.parent, timeout=60)
    return r.returncode == 0, (r.stderr or r.stdout).strip()


def run_bench_dsl(text: str, label: str, users: int, warmup: int, duration: int, workdir: Path,
                  env: dict[str, str], sample_rss: bool = False, server_pid: int | None = None,
                  extra_args: tuple[str, ...] = ()) -> tuple[Measure, dict[str, Any] | None]:
    """One `bench run --headless --json`, its window taken from its event stream on stdout."""
    m = Measure("bench-dsl", label, users)
    src, out = workdir / "run.bench", workdir / "run.json"
    src.write_text(text)
    out.unlink(missing_ok=True)
    child = Child([*BENCH_CMD, "run", str(src), "--headless", "--json", str(out), "--jsonl", "-", *extra_args],
                  workdir / "bench.err", env=env, cwd=workdir)
    start: Snapshot | None = None
    end: Snapshot | None = None
    rss = PeakMemory(child.pid) if sample_rss else None
    for line in child.lines(time.monotonic() + warmup + duration + 120 + users / 5):
        if not line.startswith("{"):
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if ev.get("type") == "phase" and ev.get("phase") == "hold" and start is None:
            start = snapshot(child.pid, server_pid)
            if rss is not None:
                rss.start()
        elif ev.get("type") == "step" and start is not None and end is None:
            end = snapshot(child.pid, server_pid)
            if rss is not None:
                m.rss_peak = rss.stop()
    if rss is not None and m.rss_peak is None:
        m.rss_peak = rss.stop()
    code = child.wait()
    doc: dict[str, Any] | None = None
    try:
        doc = json.loads(out.read_text())
    except (OSError, json.JSONDecodeError):
        pass
    summary = (doc or {}).get("summary")
    if code != 0 or summary is None or start is None or end is None:
        why = ("" if code != 0 else "no summary in its JSON result" if summary is None
               else "no `phase` hold / `step` event in its --jsonl stream to time the window by")
        m.error = f"bench exit {code}{': ' + why if why else ''}: {child.stderr_tail()}"
        return m, doc
    m.ok = True
    m.tps, m.qps, m.count = float(summary["tps"]), float(summary["qps"]), int(summary["count"])
    m.p95_ms = summary["latency_ms"]["p95"]
    m.errors = int(summary["errors"])
    m.seconds = float(summary["seconds"])
    m.usage = usage(start, end)
    m.extra = {"retries": summary.get("retries", 0), "cpu_reported": summary.get("cpu")}
    if "nopm" in summary:
        m.extra["nopm"] = summary["nopm"]
    return m, doc


# the driver floor ------------------------------------------------------------------------------

def run_floor(target: Target, users: int, warmup: int, duration: int, tables: int, table_size: int,
              workdir: Path, mode: str = "asyncmy") -> Measure:
    """bench/floor.py: a plain loop that measures nothing, executing through asyncmy (`mode`
    "asyncmy") or on the raw executor ("raw"): the least a Python client spends per query that way."""
    m = Measure(f"{mode}-loop", f"floor@{users}", users)
    env = {**os.environ, "BENCH_FLOOR_DSN": target.url()}
    child = Child([sys.executable, "-m", "bench.floor", str(users), str(warmup), str(duration), str(tables),
                   str(table_size), mode], workdir / "floor.err", env=env, cwd=Path(__file__).resolve().parent.parent)
    start: Snapshot | None = None
    end: Snapshot | None = None
    fig: dict[str, Any] = {}
    for line in child.lines(time.monotonic() + warmup + duration + 60 + users / 10):
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if ev.get("event") == "start":
            start = snapshot(child.pid, target.server_pid)
        elif ev.get("event") == "end" and start is not None:
            end = snapshot(child.pid, target.server_pid)
            fig = ev
    code = child.wait()
    if code != 0 or start is None or end is None or not fig.get("count"):
        m.error = f"floor exit {code}: {child.stderr_tail()}"
        return m
    m.ok = True
    m.count, m.seconds = int(fig["count"]), float(fig["seconds"])
    m.tps = m.qps = m.count / m.seconds
    m.usage = usage(start, end)
    return m
