"""bench/wakeups.py runs end to end. In a file of its own, away from tests/e2e/test_bench.py: it is
marked `alone`, and the suite's scheduler runs the files that hold `alone` tests first (tests/conftest.py),
so that the other process waits for it between two short tests, not for the harness's 40 s run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT


@pytest.mark.alone  # CPU per transaction in a 1 s window: a client starved by another process's test measured nothing
def test_the_wakeups_measurement_runs(tmp_path: Path) -> None:
    """bench/wakeups.py (interrupts and CPU per transaction, each client in turn) on its own server."""
    assert shutil.which("sysbench") is not None, "sysbench is not installed: run scripts/setup.sh (make test does)"
    # a 2 s window, from 2 s to 4 s after each client starts: `bench run` takes a second or two to start
    # its processes and connect, and a 1 s window (1 s to 2 s) measured a bench-dsl still starting, no
    # statement executed (tps 1, server CPU 0: this test failed so in the full suite)
    r = subprocess.run([sys.executable, "-m", "bench.wakeups", "--users", "2", "--rounds", "1", "--window", "2",
                        "--table-size", "2000"], check=False, capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [line.split("|")[1:-1] for line in r.stdout.splitlines() if line.startswith("| 2 |")]
    assert [row[1].strip() for row in rows] == ["sysbench", "bench-dsl, C executor", "bench-dsl, asyncmy"]
    for row in rows:
        tps, interrupts, server_us, client_us = (float(c.replace(",", "")) for c in row[2:])
        assert tps > 0 and interrupts >= 0 and server_us > 0 and client_us > 0
