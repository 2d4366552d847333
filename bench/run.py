"""`make bench` / `python -m bench.run`: bench-dsl against sysbench on one server, side by side.

One throwaway server (or --target / $BENCH_DSN), one data set; at each user count sysbench and
bench-dsl run alternately (A B A B) for the same warm-up and measured time, and the figures are
reported as medians of the paired ratios. Then the engine's own costs: measurement overhead,
embedded server start, memory per virtual user, TPC-C (when the workload exists), an open-loop rate
beside sysbench --rate (bench/rate.py), a server stopped during an open and a closed loop (omission),
the terminal UI's overhead (ui), the sessions' sampling (bench/sampling.py), `workers ray` against
`workers auto` (bench/ray.py), and the coordinator at 10 to 1,000 simulated workers
(bench/coordinator.py, no database). Writes
bench/results/<time>.json and .md, and latest.json / latest.md beside them."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from bench import procs
from bench.clients import Target, bench_check, bench_env, bench_file, sysbench_workload
from bench.compare import Settings, prepare, run_point, sql
from bench.coordinator import TICKS as COORDINATOR_TICKS
from bench.coordinator import WORKERS as COORDINATOR_WORKERS
from bench.coordinator import coordinator_section
from bench.host import loadavg, machine, tools
from bench.omission import settings as omission_settings
from bench.rate import RATES, rate_section
from bench.rate import USERS as RATE_USERS
from bench.ray import ray_estimate_s, ray_section
from bench.report import render
from bench.sampling import sampling_cost, sampling_estimate_s

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("overhead", "server-start", "compare", "tls", "sampling", "memory", "tpcc", "rate", "omission", "ui",
            "ray", "coordinator")
QUICK_SECTIONS = ("overhead", "server-start", "compare", "memory")
FORMAT = "bench-dsl-performance"


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that the same clean-up as for Ctrl-C runs."""


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.replace(" ", "").split(",") if x]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Every figure is taken beside its reference at the same moment; on a shared or busy machine "
               "read the ratios, not the absolute figures.")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run of the harness: 4 users, 1 pair, a few seconds each, small sections (~40 s)")
    p.add_argument("--pairs", type=int, help="sysbench/bench-dsl pairs per point, plus a closing sysbench run (default 5; quick 1)")
    p.add_argument("--warmup", type=int, help="unmeasured seconds at the start of each run (default 2; quick 1)")
    p.add_argument("--duration", type=int, help="measured seconds of each run (default 8; quick 2)")
    p.add_argument("--users", type=_ints, help="oltp_point_select user counts (default 1,4,16,64,256; quick 4)")
    p.add_argument("--rw-users", type=_ints, help="oltp_read_write user counts, '' for none (default 4,16,64; quick none)")
    p.add_argument("--floor-users", type=_ints,
                   help="oltp_point_select user counts at which the two floors (plain asyncmy and raw-executor loops) run too "
                        "('' for none; default 1,4; quick 4)")
    p.add_argument("--tables", type=int, help="sysbench tables (default 4; quick 1)")
    p.add_argument("--table-size", type=int, help="rows per table (default 50000; quick 10000)")
    p.add_argument("--workers", metavar="auto|N",
                   help="write `workers auto|N` into every scenario (default: no such line, the engine's default)")
    p.add_argument("--memory-users", type=int, help="virtual users of the memory run (default 1000; quick 50)")
    p.add_argument("--target", metavar="DSN", default=os.environ.get("BENCH_DSN") or None,
                   help="an existing server, mysql://user:password@host:port/db (default $BENCH_DSN; unset: a "
                        "throwaway server). Its database's sbtest tables are dropped and reloaded.")
    p.add_argument("--buffer-pool", type=int, default=1024, metavar="MiB",
                   help="innodb_buffer_pool_size of the throwaway server (default 1024)")
    p.add_argument("--sections", help=f"comma-separated, of {', '.join(SECTIONS)} (default all; quick: "
                                      f"{', '.join(QUICK_SECTIONS)})")
    p.add_argument("--seed", type=int, default=42, help="bench-dsl's seed (sysbench draws its own)")
    p.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results",
                   help="where <time>.json/.md and latest.json/.md go (default bench/results)")
    p.add_argument("--keep-files", action="store_true", help="keep the generated .bench files and client logs")
    p.add_argument("--rates", type=_ints, default=list(RATES),
                   help=f"the rate section's rates, tps (default {','.join(map(str, RATES))})")
    p.add_argument("--rate-users", type=int, default=RATE_USERS, help=f"its pool of users (default {RATE_USERS})")
    p.add_argument("--rate-pairs", type=int, help="its sysbench/bench-dsl pairs per rate (default 2; quick 1)")
    p.add_argument("--poisson", action="store_true", help="bench-dsl's arrivals Poisson too (sysbench's always are)")
    p.add_argument("--rate-queue", type=int, help="bench-dsl's queue (default: a second of arrivals; 0: drop)")
    p.add_argument("--omission", type=omission_settings, default={}, metavar="KEY=VALUE,...",
                   help="the omission section's settings: rate, users, closed_users, stall, stall_at, warmup, duration "
                        "(default rate=1000,stall=2,duration=10)")
    p.add_argument("--coordinator-workers", type=_ints, default=list(COORDINATOR_WORKERS),
                   help="the coordinator section's simulated workers "
                        f"(default {','.join(map(str, COORDINATOR_WORKERS))})")
    p.add_argument("--coordinator-ticks", type=int,
                   help=f"its ticks at each size (default {COORDINATOR_TICKS}; quick 5)")
    p.add_argument("--tpcc-against", type=Path, metavar="DIR",
                   help="the tpcc section also runs another tree's bench-dsl (DIR holds bench_dsl/ with its built "
                        "_native), each mode alternated with this tree's: the client's cost before and after a change")
    return p


def _defaults(a: argparse.Namespace) -> argparse.Namespace:
    quick = a.quick
    for name, full, small in (("pairs", 5, 1), ("warmup", 2, 1), ("duration", 8, 2), ("users", [1, 4, 16, 64, 256], [4]),
                              ("rw_users", [4, 16, 64], []), ("floor_users", [1, 4], [4]), ("tables", 4, 1), ("table_size", 50_000, 10_000),
                              ("memory_users", 1000, 50), ("rate_pairs", 2, 1),
                              ("coordinator_ticks", COORDINATOR_TICKS, 5)):
        if getattr(a, name) is None:
            setattr(a, name, small if quick else full)
    a.sections = (tuple(s.strip() for s in a.sections.split(",") if s.strip()) if a.sections
                  else QUICK_SECTIONS if quick else SECTIONS)
    return a


class Harness:
    def __init__(self, args: argparse.Namespace) -> None:
        self.a = args
        self.t0 = time.monotonic()
        self.started = dt.datetime.now(dt.UTC)
        self.stamp = self.started.astimezone().strftime("%Y%m%d-%H%M%S")
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-harness-"))
        self.server: Any = None  # bench_dsl.server.embedded.EmbeddedServer, imported only when one is started
        self.certs: Any = None  # tests.tls.Certificates of the TLS row's server
        self.target: Target | None = None
        self.ncpu = psutil.cpu_count() or 1
        self.settings = Settings(args.pairs, args.warmup, args.duration, args.tables, args.table_size, args.seed,
                                 args.workers)
        self.doc: dict[str, Any] = {
            "format": FORMAT, "format_version": 1, "status": "running",
            "started_at": self.started.astimezone().isoformat(timespec="seconds"), "finished_at": None,
            "settings": {"pairs": args.pairs, "warmup": args.warmup, "duration": args.duration,
                         "users": args.users, "rw_users": args.rw_users, "floor_users": args.floor_users,
                         "tables": args.tables,
                         "table_size": args.table_size, "workers": args.workers, "memory_users": args.memory_users,
                         "sections": list(args.sections), "quick": args.quick, "seed": args.seed},
            "machine": machine(), "server": None, "tools": {}, "notes": [], "errors": [],
        }

    # ----------------------------------------------------------------------------------------------
    def log(self, msg: str) -> None:
        secs = int(time.monotonic() - self.t0)
        print(f"[{secs // 60:02d}:{secs % 60:02d}] {msg}", file=sys.stderr, flush=True)

    def section(self, name: str, fn: Callable[[], Any]) -> bool:
        """A section that fails is recorded and reported; the others still run. True if it ran."""
        if name not in self.a.sections and name != "prepare":
            return False
        key = name.replace("-", "_")
        ok = True
        try:
            self.doc[key] = fn()
        except Exception as exc:
            ok = False
            msg = f"{name}: {type(exc).__name__}: {exc}"
            self.doc[key] = {"error": f"{type(exc).__name__}: {exc}"}
            self.doc["errors"].append(msg)
            self.log(msg)
            if os.environ.get("BENCH_DEBUG"):
                traceback.print_exc()
        self.write()  # a kill later on still leaves every section measured so far
        return ok

    def estimate_s(self) -> float:
        a, per_run = self.a, self.a.warmup + self.a.duration
        n = 0.0
        if "compare" in a.sections:
            points = len(a.users) + len(a.rw_users)
            n += ((2 * points + 2 * len(a.floor_users)) * a.pairs + points) * (per_run + 3) + 20
        if "tls" in a.sections:
            n += (2 * a.pairs + 1) * (per_run + 3)
        n += sampling_estimate_s(a.pairs, a.warmup, a.duration) if "sampling" in a.sections else 0
        if "memory" in a.sections:
            n += 3 * (per_run + 3) + a.memory_users / 100
        if "tpcc" in a.sections:
            n += 60 + a.pairs * 2 * (15 + 3)
        if "server-start" in a.sections:
            n += (1 if a.quick else 3) * 2 * 2
        if "rate" in a.sections:
            n += len(a.rates) * a.rate_pairs * 2 * (per_run + 4)
        if "omission" in a.sections:
            n += 2 * (2 + a.omission.get("duration", 10) + 5)
        n += ray_estimate_s(a.pairs, a.warmup, a.duration) if "ray" in a.sections else 0
        if "coordinator" in a.sections:
            n += sum(a.coordinator_ticks + 2 + w / 200 for w in a.coordinator_workers) + a.coordinator_ticks + 75
        return n + 10

    # ----------------------------------------------------------------------------------------------
    def run(self) -> int:
        a = self.a
        needs_server = bool({"compare", "tls", "sampling", "memory", "tpcc", "rate", "omission", "ui"}
                            & set(a.sections))
        if needs_server and {"compare", "memory", "rate"} & set(a.sections) and shutil.which("sysbench") is None:
            print("bench: sysbench is not installed: `make bench` installs it (sudo apt-get install sysbench)",
                  file=sys.stderr)
            return 2
        limit = procs.raise_fd_limit(max(4096, 2 * a.memory_users + 512))
        self.log(f"sections: {', '.join(a.sections)}; about {self.estimate_s() / 60:.0f} min "
                 f"(open files limit {limit})")
        self.doc["tools"] = tools(self.workdir, {**os.environ})
        self.section("overhead", self._overhead)
        self.section("server-start", self._server_start)
        if needs_server:
            self._start_target()
            assert self.target is not None
            target, env = self.target, bench_env(self.target)
            self._preflight(env)
            if ({"compare", "tls", "sampling", "memory"} & set(a.sections)
                    and not self.section("prepare", lambda: prepare(target, self.settings, self.workdir, env,
                                                                    self.log))):
                self.log("the data could not be prepared: the comparison and the memory run cannot run")
                a.sections = tuple(s for s in a.sections if s not in ("compare", "tls", "sampling", "memory"))
            self.section("compare", lambda: self._compare(env))
            self.section("tls", lambda: self._tls(env))
            self.section("sampling", lambda: sampling_cost(target, a.pairs, a.warmup, a.duration, a.tables,
                                                           a.table_size, a.seed, a.workers, self.workdir, env,
                                                           self.log))
            self.section("memory", lambda: self._memory(env))
            self.section("tpcc", lambda: self._tpcc(env))
            self.section("rate", lambda: self._rate(env))
            self.section("omission", lambda: self._omission(env))
            self.section("ui", self._ui)
        self.section("ray", lambda: ray_section(self.settings, self.ncpu, self.workdir, self.log))  # its own server
        self.section("coordinator", lambda: coordinator_section(tuple(a.coordinator_workers), a.coordinator_ticks,
                                                                a.seed, self.log))  # no server
        self.doc["status"] = "completed"
        return 0

    def _tls(self, env: dict[str, str]) -> dict[str, Any]:
        from bench.tls import tls_vs_plain

        if self.certs is None or self.target is None:
            return {"skipped": "skipped: the TLS row needs the throwaway server (the harness makes its certificate)"}
        a = self.a
        r = tls_vs_plain(self.target, self.certs.ca, a.pairs, a.warmup, a.duration, a.tables, a.table_size, a.seed,
                         self.workdir, env, self.log)
        med = r["tps_ratio"]["median"]
        self.log(f"TLS / plain at {r['users']} users: tps {med if med is None else f'{med:.2f}x'}, client CPU per "
                 f"transaction {r['cpu_ratio']['median']}")
        return r

    def _overhead(self) -> dict[str, Any]:
        from bench.micro import measurement_overhead

        pairs, n = (3, 50_000) if self.a.quick else (7, 200_000)
        r = measurement_overhead(pairs, n)
        self.log(f"measurement overhead: {r['ns_per_tx']:,.0f} ns per transaction (reference {r['reference_ns']:,.0f} "
                 f"ns, {r['ratio_to_reference']['median']:.1f}x); target < 2,000 ns")
        return r

    def _server_start(self) -> dict[str, Any]:
        from bench.micro import server_start

        r = server_start(1 if self.a.quick else 3)
        self.log(f"server start to first query: {r['seconds']:.2f}s (by hand {r['reference_seconds']:.2f}s); "
                 "target < 1.5 s")
        return r

    def _start_target(self) -> None:
        a = self.a
        from bench_dsl.core.dsn import parse_dsn

        wanted = max([*a.users, *a.rw_users, a.memory_users if "memory" in a.sections else 0, a.rate_users, 8]) + 100
        if a.target:
            from bench_dsl.server.facts import facts

            dsn = parse_dsn(a.target)
            t = Target(dsn.host, dsn.port, dsn.user, dsn.password, dsn.database, dsn.socket, None, False)
            asyncio.run(sql(t, [f"CREATE DATABASE IF NOT EXISTS `{dsn.database}`"]))
            pid = asyncio.run(facts(dsn, None)).pid
            self.target = Target(dsn.host, dsn.port, dsn.user, dsn.password, dsn.database, dsn.socket, pid, False)
            if pid is None:
                self.doc["notes"].append("the server does not run on this machine: its CPU is not measured")
        else:
            from bench_dsl.server.embedded import EmbeddedServer

            tls_args: list[str] = []
            if "tls" in a.sections:  # the TLS row's certificate, made for this run and removed with it
                from tests.tls import make_certificates

                self.certs = make_certificates()
                tls_args = [f"--ssl-ca={self.certs.ca}", f"--ssl-cert={self.certs.server_cert}",
                            f"--ssl-key={self.certs.server_key}"]
            self.server = EmbeddedServer(max_connections=wanted,
                                         extra_args=[f"--innodb-buffer-pool-size={a.buffer_pool}M", *tls_args])
            dsn = asyncio.run(self.server.start())
            self.target = Target("127.0.0.1", dsn.port, "root", dsn.password, dsn.database, None, self.server.pid, True)
            self.log(f"throwaway server up on 127.0.0.1:{dsn.port} (pid {self.server.pid})")
        rows = asyncio.run(sql(self.target, ["SELECT VERSION(), @@max_connections, @@innodb_buffer_pool_size"]))
        version, max_conn, bp = rows[0][0]
        self.doc["server"] = {"version": version, "embedded": self.target.embedded, "max_connections": int(max_conn),
                              "buffer_pool_mib": int(bp) // (1024 * 1024), "address": self.target.redacted(),
                              "pid_visible": self.target.server_pid is not None}
        # A user count the server cannot take would only measure "too many connections".
        cap = int(max_conn) - 10
        dropped = [u for u in [*a.users, *a.rw_users] if u > cap]
        if dropped:
            a.users = [u for u in a.users if u <= cap]
            a.rw_users = [u for u in a.rw_users if u <= cap]
            self.doc["notes"].append(f"max_connections {max_conn}: left out the points at {dropped} users")
        if "memory" in a.sections and a.memory_users > cap:
            self.doc["memory"] = {"skipped": f"skipped: max_connections {max_conn} is below {a.memory_users} users"}
            a.sections = tuple(s for s in a.sections if s != "memory")

    def _preflight(self, env: dict[str, str]) -> None:
        """Before anything is measured: does this bench-dsl accept the files the harness writes?"""
        assert self.target is not None
        src = self.workdir / "preflight.bench"
        src.write_text(bench_file("preflight", self.target, sysbench_workload("oltp_point_select", 1, 1000), 1, 1, 1,
                                  self.a.seed, self.a.workers))
        ok, msg = bench_check(src, env)
        if not ok:
            hint = (f"\n  this bench-dsl does not accept `workers {self.a.workers}` yet: run without --workers"
                    if self.a.workers is not None and "workers" in msg else "")
            raise SystemExit(f"bench: the generated scenario does not validate:\n{msg}{hint}")

    def _compare(self, env: dict[str, str]) -> list[dict[str, Any]]:
        assert self.target is not None
        points: list[dict[str, Any]] = []
        self.doc["compare"] = points  # filled point by point, so a partial run still has its points
        for test, counts in (("oltp_point_select", self.a.users), ("oltp_read_write", self.a.rw_users)):
            for users in counts:
                floor = test == "oltp_point_select" and users in self.a.floor_users
                points.append(run_point(self.target, test, users, self.settings, self.workdir, env, self.ncpu,
                                        self.log, floor=floor))
                self.write()
        return points

    def _memory(self, env: dict[str, str]) -> dict[str, Any]:
        from bench.memory import memory_per_user

        assert self.target is not None
        warmup, duration = (1, 2) if self.a.quick else (3, 5)
        return memory_per_user(self.target, self.settings, self.a.memory_users, warmup, duration, self.workdir,
                               env, self.log)

    def _tpcc(self, env: dict[str, str]) -> dict[str, Any]:
        from bench.tpcc import tpcc

        assert self.target is not None
        r = tpcc(self.target, self.settings, 5, 10, self.workdir, env, self.log, self.a.tpcc_against)
        if "skipped" in r:
            self.log(f"tpcc: {r['skipped']}")
        return r

    def _rate(self, env: dict[str, str]) -> dict[str, Any]:
        assert self.target is not None
        a = self.a
        return rate_section(self.target, [float(r) for r in a.rates], a.rate_users, a.rate_pairs, a.warmup,
                            a.duration, a.seed, a.workers, a.poisson, a.rate_queue, self.workdir, env,
                            self.log)

    def _omission(self, env: dict[str, str]) -> dict[str, Any]:
        """Its chart goes beside the results (omission-<time>.svg/.png)."""
        from bench.omission import omission

        assert self.target is not None
        whole = ("users", "closed_users", "warmup", "duration")
        o = {k: (int(v) if k in whole else v) for k, v in self.a.omission.items()}
        o["stall_s"] = o.pop("stall", 2.0)
        return omission(self.target, self.workdir, env, self.log, **o, seed=self.a.seed, workers=self.a.workers,
                        chart_dir=self.a.out_dir, chart_name=f"omission-{self.stamp}")

    def _ui(self) -> dict[str, Any]:
        """bench/ui_overhead.py (written apart) measures the terminal UI; it gets the same target."""
        if importlib.util.find_spec("bench.ui_overhead") is None:
            return {"skipped": "skipped: bench/ui_overhead.py is not there yet"}
        assert self.target is not None
        mod = importlib.import_module("bench.ui_overhead")
        path = self.workdir / "ui_overhead.json"
        old = os.environ.get("BENCH_DSN")
        os.environ["BENCH_DSN"] = self.target.url()
        try:
            code = mod.main(["--out", str(path)])
        except SystemExit as exc:
            code = exc.code
        finally:
            if old is None:
                os.environ.pop("BENCH_DSN", None)
            else:
                os.environ["BENCH_DSN"] = old
        if code not in (0, None):
            return {"error": f"bench/ui_overhead.py exited {code}"}
        result: dict[str, Any] = json.loads(path.read_text())
        return result

    # ----------------------------------------------------------------------------------------------
    def write(self) -> Path:
        self.doc["machine"]["loadavg_end"] = loadavg()
        self.doc["elapsed_s"] = round(time.monotonic() - self.t0, 1)
        out = self.a.out_dir
        out.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.doc, indent=1, default=str) + "\n"
        md = render(self.doc) + "\n"
        for name, content in ((f"{self.stamp}.json", text), (f"{self.stamp}.md", md), ("latest.json", text),
                              ("latest.md", md)):
            tmp = out / f".{name}.tmp"
            tmp.write_text(content)
            tmp.replace(out / name)
        return out / f"{self.stamp}.md"

    def close(self) -> None:
        procs.stop_all_children()
        if self.server is not None:
            self.server.stop()  # by its own pid, and its files removed
            self.server = None
        if self.certs is not None:
            self.certs.remove()
            self.certs = None
        if not self.a.keep_files:
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            self.log(f"kept the generated files in {self.workdir}")


def main(argv: list[str] | None = None) -> int:
    args = _defaults(build_parser().parse_args(argv))
    bad = [s for s in args.sections if s not in SECTIONS]
    if bad:
        print(f"bench: unknown section(s) {', '.join(bad)}; sections: {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    if args.pairs < 1 or args.duration < 1 or args.warmup < 0:
        print("bench: --pairs and --duration must be at least 1, --warmup at least 0", file=sys.stderr)
        return 2

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)
    h = Harness(args)
    code = 1
    try:
        code = h.run()
    except (KeyboardInterrupt, Terminated) as exc:
        h.doc["status"] = "interrupted"
        h.log("interrupted: stopping the clients and the server, writing what was measured")
        code = 143 if isinstance(exc, Terminated) else 130
    except SystemExit as exc:
        h.doc["status"] = "failed"
        h.doc["errors"].append(str(exc.code))
        print(exc.code, file=sys.stderr)
        code = 2
    except Exception as exc:
        h.doc["status"] = "failed"
        h.doc["errors"].append(f"{type(exc).__name__}: {exc}")
        h.log(f"failed: {type(exc).__name__}: {exc}")
        if os.environ.get("BENCH_DEBUG"):
            traceback.print_exc()
        code = 1
    finally:
        try:
            h.close()
        finally:
            h.doc["finished_at"] = dt.datetime.now(dt.UTC).astimezone().isoformat(timespec="seconds")
            md = h.write()
            h.log(f"results: {md} and {md.with_suffix('.json')} (also latest.md, latest.json)")
    if code == 0:
        print(render(h.doc))
    return code


if __name__ == "__main__":
    sys.exit(main())
