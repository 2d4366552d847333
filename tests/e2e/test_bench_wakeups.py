"""bench/wakeups.py runs end to end (its figures are checked for being there, not for their size)."""

from __future__ import annotations

import pytest

import shutil
import subprocess
import sys
from pathlib import Path

from ..conftest import ROOT


@pytest.mark.harness  # make test-machine: the benchmark's harness at full load, alone
def test_the_wakeups_measurement_runs(tmp_path: Path) -> None:
    """bench/wakeups.py (interrupts and CPU per transaction, each client in turn) on its own server."""
    assert shutil.which("sysbench") is not None, "sysbench is not installed: run scripts/setup.sh (make test does)"
    # the harness begins its windows at a client's first executed statement: a fixed delay from its
    # start measured, on a loaded machine, a bench-dsl still starting (tps 1, server CPU 0)
    r = subprocess.run([sys.executable, "-m", "bench.wakeups", "--users", "2", "--rounds", "1", "--window", "1",
                        "--table-size", "2000"], check=False, capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [line.split("|")[1:-1] for line in r.stdout.splitlines() if line.startswith("| 2 |")]
    assert [row[1].strip() for row in rows] == ["sysbench", "bench-dsl, C executor", "bench-dsl, asyncmy"]
    for row in rows:
        tps, interrupts, server_us, client_us = (float(c.replace(",", "")) for c in row[2:])
        assert tps > 0 and interrupts >= 0 and server_us > 0 and client_us > 0
