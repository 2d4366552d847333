"""Installing without libmariadb: the package still installs and runs, on asyncmy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import source_tree


@pytest.mark.slow
def test_without_libmariadb_the_package_installs_and_runs_on_asyncmy(tmp_path: Path, dsn_url: str) -> None:
    """Built where mariadb_config is missing (MARIADB_CONFIG set empty stands for it), `pip install .`
    still gives a working `bench`: every statement through asyncmy, and the run says how to get the
    fast path."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # --no-compile: no .pyc of the ~30 dependencies at install (half its time); imports compile what they use
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(source_tree(tmp_path / "src"))], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "MARIADB_CONFIG": ""})
    assert pip.returncode == 0, pip.stderr[-3000:]
    src = tmp_path / "s.bench"
    src.write_text('scenario "plain" { target env("BENCH_DSN")\n'
                   '  workload sysbench oltp_point_select { tables = 1  table_size = 1000 }\n'
                   '  users 2  warmup 0s  duration 2s }\n')
    out = tmp_path / "r.json"
    r = subprocess.run([str(venv / "bin" / "bench"), "run", str(src), "--headless", "--json", str(out)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300, env={**os.environ, "BENCH_DSN": dsn_url})
    assert r.returncode == 0, r.stderr
    assert "libmariadb-dev" in r.stderr and json.loads(out.read_text())["executor"] == "driver"
