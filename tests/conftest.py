"""Tests talk to a real server: BENCH_DSN when set, else one throwaway server for the session.

`make test` runs the suite in four processes (pytest-xdist, `-n 4 --dist loadfile --no-loadscope-reorder`,
the files in the order `pytest_collection_modifyitems` below gives them): each process
is a session of its own, with its own throwaway server, so no two tests share a server's global
settings or tables (with BENCH_DSN, one server for all, the Makefile runs one process). A file runs
whole in one process, in its order: a module's fixture is made once, and a test "last in the module"
stays last. A test marked `alone` (it measures time or CPU against absolutes) has the machine to
itself: the other processes wait between two tests until it is done (`machine_share` below).
(`--dist loadgroup` would group finer, but xdist 3.8 cannot set a group with pytest 9.2: it renames
an item through `_nodeid`, which pytest 9.2 no longer reads.)"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, settings

from bench_dsl.core import stacks
from bench_dsl.core.dsn import Dsn, parse_dsn, redact
from bench_dsl.engine.judge import CUT_SHORT
from bench_dsl.server.connect import connect
from bench_dsl.server.embedded import EmbeddedServer
from bench_dsl.server.replication import start_replicas

ROOT = Path(__file__).resolve().parent.parent
BENCH = [sys.executable, "-m", "bench_dsl.cli.main"]

# The suite's property tests draw the same examples at every run, as many as a quick test needs: a
# failure is one to reproduce, never the luck of a draw, and no time limit per example (a loaded
# machine is no bug). `make fuzz` (tests/fuzzing.py) is the long run with new inputs each time;
# HYPOTHESIS_PROFILE=fuzz gives the property tests themselves random inputs and many more of them.
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile("suite", derandomize=True, max_examples=150, deadline=None, database=None,
                          print_blob=True, suppress_health_check=_QUIET)
settings.register_profile("fuzz", derandomize=False, max_examples=5_000, deadline=None, database=None,
                          print_blob=True, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


def source_tree(dest: Path) -> Path:
    """A copy of the repository's tracked files (links kept as links): what `pip install .` builds
    on a fresh clone, without what an earlier build left in ./build on this machine."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        src, out = ROOT / name, dest / name
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the work tree, not yet in git
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out, follow_symlinks=False)
    return dest


def default_signals() -> None:
    """preexec_fn of a run that a test signals: the signals' default actions, as from a terminal,
    whatever the suite was started under (`nohup`, or a background job, which ignores SIGINT: a
    run keeps a signal it was started to ignore ignored, by design)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Under xdist each process's temp dir is <the run's>/popen-gw0: ten characters more in every
    tmp_path, and a throwaway server's socket, in its directory, ran over the 107 bytes a socket's
    path may have (tmp_path/bench-dsl-server-*/mysqld.sock). <the run's>/gw0 instead."""
    base, worker = config.option.basetemp, os.environ.get("PYTEST_XDIST_WORKER")
    if worker and base and Path(base).name == f"popen-{worker}":
        config.option.basetemp = str(Path(base).parent / worker)
    if worker:
        _own_share_of_the_cpus()


def _own_share_of_the_cpus() -> None:
    """Each test process in a session of its own: with the kernel's autogroup (Debian's default),
    CPU time is shared between sessions first, then between the threads of a session. In one
    session, a test running 64 users' threads at full speed took 64 shares for every share of a
    test in another process waiting on one 20 ms statement: that one saw 100 ms stalls and failed
    its rates and counts. A session each, the four processes share the cores evenly whatever their
    tests start (each throwaway server is already a session of its own)."""
    with contextlib.suppress(OSError):  # a process group's leader cannot: it keeps the run's session
        os.setsid()


# The order in which `--dist loadfile --no-loadscope-reorder` hands the files out (xdist's default
# reorder puts the files with most tests first: the long one-test files came last and ended the run on
# one process). First the files that hold `alone` tests: they take the machine by turns and the other
# processes wait a few seconds for them, not for the 40 s run of a whole-run test one was in the middle
# of. Then the whole runs, the server tests, the screens, and last the unit tests, short enough to
# even out the processes' ends.
_FLOOR_ORDER = ("e2e", "engine", "ui", "unit")
# Of their floor, the files of several minutes go first (the longest first, as a scheduler that knows
# its jobs' lengths would): handed out in name order, test_runs.py (some 340 s of work) and
# test_study.py (200 s) started late and alone made the run's last minutes. test_bottleneck_provoked.py
# (ten throwaway servers, some 120 s) after them.
_LONG_FIRST = ("e2e/test_runs.py", "e2e/test_failures.py", "e2e/test_study.py", "e2e/test_ray.py",
               "e2e/test_bottleneck_provoked.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(path: Path) -> tuple[int, int, int]:
        alone = any(i.get_closest_marker("alone") for i in by_file[path])
        floor = path.parent.name
        name = f"{floor}/{path.name}"
        return (0 if alone else 1, _FLOOR_ORDER.index(floor) if floor in _FLOOR_ORDER else len(_FLOOR_ORDER),
                _LONG_FIRST.index(name) if name in _LONG_FIRST else len(_LONG_FIRST))

    by_file: dict[Path, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)
    # a stable sort: each file's tests keep their order, files of a rank their collection order
    items[:] = [item for path in sorted(by_file, key=rank) for item in by_file[path]]


@pytest.fixture(autouse=True)
def machine_share(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under xdist, a lock all the processes of the run share: each test holds it shared, a test marked
    `alone` exclusively. Whoever waits for it holds the turnstile, so that an `alone` test is not
    starved by the other process taking the shared lock again test after test."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    run_dir = tmp_path_factory.getbasetemp().parent  # the run's, above each process's own
    alone = request.node.get_closest_marker("alone") is not None
    with open(run_dir / "turnstile.lock", "a") as turnstile, open(run_dir / "machine.lock", "a") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)


@pytest.fixture(scope="session", autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where studies write down a server's settings (bench_dsl/server/remote_settings.py): the suite's own,
    never the home directory of whoever runs it."""
    path = tmp_path_factory.mktemp("state")
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(path)
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = before


@pytest.fixture(scope="session")
def server() -> Iterator[tuple[Dsn, EmbeddedServer | None]]:
    if os.environ.get("BENCH_DSN"):
        yield parse_dsn(os.environ["BENCH_DSN"]), None
        return
    srv = EmbeddedServer(max_connections=400)
    dsn = asyncio.run(srv.start())
    os.environ["BENCH_DSN"] = srv.url()
    try:
        yield dsn, srv
    finally:
        os.environ.pop("BENCH_DSN", None)
        srv.stop()


class SecretUrl(str):
    """A server's address whose password a failing test's report does not show: pytest prints each
    argument of a failing test with repr() (`dsn_url = 'mysql://root:...@...'`), and a CI log is
    output like any other (bench_dsl.core.dsn.redact)."""

    def __repr__(self) -> str:
        return repr(redact(str(self)))


def pytest_assertrepr_compare(op: str, left: object, right: object) -> list[str] | None:
    """A failed comparison of a text holding an address is shown with its password redacted: pytest's
    own explanation diffs the texts whole."""
    if any(isinstance(x, str) and redact(x) != x for x in (left, right)):
        return [f"{redact(repr(left))} {op} {redact(repr(right))}"]
    return None


@pytest.fixture(scope="session")
def dsn_url(server: tuple[Dsn, EmbeddedServer | None]) -> str:
    return SecretUrl(os.environ["BENCH_DSN"])


def run_bench(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
              cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`bench *args`, its output captured. One that has not ended in `timeout` fails the test with
    where each of its processes stood (bench_dsl/core/stacks.py) and the end of what it printed."""
    proc = subprocess.Popen([*BENCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, cwd=cwd or ROOT)
    try:
        out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        pass
    family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    for p in family:
        with contextlib.suppress(psutil.Error):
            if "python" in p.name():
                p.send_signal(stacks.ASK)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=3)
    for p in family:
        with contextlib.suppress(psutil.Error):
            p.kill()
    _, err = proc.communicate()
    pytest.fail(f"bench {' '.join(args)} did not end in {timeout:g}s; its stderr ends:\n{err[-12000:]}", pytrace=False)


def froze(doc: dict[str, Any]) -> bool:
    """Whether the run rightly called a step no measurement because nothing was answered for a while
    during it (bench_dsl.engine.judge.stalled): on this 2-core machine, under the suite's four
    processes, the machine itself froze for 1 to 2 s about once a suite (ticks that far apart, a
    SELECT 1 answered seconds late). A test that holds a clean step to figures runs such a run again
    (`run_measured`); what an unclean step does is tested on its own (tests/e2e/test_failures.py)."""
    return any(not s["complete"] and s.get("incomplete_reason") not in (None, CUT_SHORT) and (s.get("stall_s") or 0) > 0
               for s in doc["steps"])


def run_measured(*args: str, out: Path, attempts: int = 3,
                 env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`bench *args` that writes its result to `out`, run again (at most `attempts` runs in all) while
    a step of it froze (`froze`); the last run and its result. A run that fails otherwise is returned
    as it is, for the test to say why."""
    for _ in range(attempts):
        out.unlink(missing_ok=True)
        r = run_bench(*args, env=env)
        if r.returncode != 0 or not out.exists():
            return r, {}
        doc = json.loads(out.read_text())
        if not froze(doc):
            break
    return r, doc


async def fetch_all(dsn: Dsn, sql: str) -> list[tuple[Any, ...]]:
    """Every row of one query on the address's database, on a connection of the tests' own."""
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute(sql)
            return list(await cur.fetchall())
    finally:
        conn.close()


async def run_sql(dsn: Dsn, database: str | None, *statements: str) -> None:
    """Statements on one connection of the tests' own (set-up, grants), in order."""
    conn = await connect(dsn, database)
    try:
        async with conn.cursor() as cur:
            for statement in statements:
                await cur.execute(statement)
    finally:
        conn.close()


@contextlib.contextmanager
def primary_and_replica(max_connections: int = 100) -> Iterator[tuple[EmbeddedServer, EmbeddedServer]]:
    """A throwaway primary and a replica attached to it, stopped at the end whatever happened."""
    primary = EmbeddedServer(role="primary", max_connections=max_connections)
    replicas: list[EmbeddedServer] = []

    async def up() -> None:
        await primary.start()
        replicas.extend(await start_replicas(primary, 1, (), False, lambda _: None))

    try:
        asyncio.run(up())
        yield primary, replicas[0]
    finally:
        for s in [*replicas, primary]:
            s.stop()


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A file system of `size` (e.g. 64k) at `path`, to fill up: a tmpfs (the suite runs as root),
    unmounted when the test ends, whatever it did."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def loaded_by(args: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None) -> tuple[set[str], int]:
    """The top-level packages a `bench` command has imported by the time it exits, and its status."""
    probe = ("import atexit, runpy, sys\n"
             "out = sys.argv.pop(1)\n"
             "atexit.register(lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules))))\n"
             "sys.argv[0] = 'bench'\n"
             "runpy.run_module('bench_dsl.cli', run_name='__main__')\n")
    listing = cwd / f".modules-{os.getpid()}"  # this process's: another may run the next parameter at once
    r = subprocess.run([sys.executable, "-c", probe, str(listing), *args], cwd=cwd, capture_output=True, text=True,
                       timeout=300, env=env)
    try:
        return {m.split(".")[0] for m in listing.read_text().split()}, r.returncode
    finally:
        listing.unlink(missing_ok=True)
