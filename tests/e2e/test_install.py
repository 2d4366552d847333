"""`pip install .` into a fresh venv gives a working `bench`, with the C executor where libmariadb is
there to build it against, and on asyncmy where it is not.

One venv serves both (module fixture): installing the ~30 dependencies is most of an install's time,
and what is tested is the package, built twice: as a plain install (mariadb_config found), and built
again with MARIADB_CONFIG set empty (standing for a machine without libmariadb) into a directory of
its own that is put first on the path, so the plain install stays as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, source_tree

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return source_tree(tmp_path_factory.mktemp("install") / "src")


@pytest.fixture(scope="module")
def venv(tree: Path) -> Path:
    venv = tree.parent / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # --no-compile: no .pyc of the dependencies at install (half its time); imports compile what they use
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(tree)],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-3000:]
    return venv


def test_wheel_carries_the_grammar(venv: Path, tmp_path: Path) -> None:
    """The grammar, the UI and the C executor, built against libmariadb, are inside the wheel."""
    r = subprocess.run([str(venv / "bin" / "bench"), "check", "--plan", str(ROOT / "examples/quickstart.bench")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "step 1/1 hold" in r.stdout
    probe = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import bench_dsl.tui, importlib.resources as r; "
                            "print(r.files('bench_dsl.grammar').joinpath('bench.lark').is_file()); "
                            "from bench_dsl import native; from bench_dsl.native import executor; "
                            "print(native.raw_executor, native.problem is None, executor.NativeUser.executor)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert probe.stdout.split() == ["True", "True", "True", "libmariadb"], probe.stderr


def test_without_libmariadb_the_package_installs_and_runs_on_asyncmy(venv: Path, tree: Path, tmp_path: Path,
                                                                     dsn_url: str) -> None:
    """Built where mariadb_config is missing, the package still installs and gives a working `bench`:
    every statement through asyncmy, and the run says how to get the fast path."""
    site = tmp_path / "site"
    # the build backend pyproject asks for, put in the venv once, not in a fresh build env per install
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", "setuptools>=77", "wheel"],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-3000:]
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", "--no-deps",
                          "--no-build-isolation", "--target", str(site), str(tree)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "MARIADB_CONFIG": ""})
    assert pip.returncode == 0, pip.stderr[-3000:]
    assert not list(site.glob("bench_dsl/native/_native*.so"))  # built without the C core
    src = tmp_path / "s.bench"
    src.write_text('scenario "plain" { target env("BENCH_DSN")\n'
                   '  workload sysbench oltp_point_select { tables = 1  table_size = 1000 }\n'
                   '  users 2  warmup 0s  duration 2s }\n')
    out = tmp_path / "r.json"
    # the build's own `bench`, its package first on the path (workers are started with the same path)
    r = subprocess.run([str(site / "bin" / "bench"), "run", str(src), "--headless", "--json", str(out)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300,
                       env={**os.environ, "BENCH_DSN": dsn_url, "PYTHONPATH": str(site)})
    assert r.returncode == 0, r.stderr
    assert "libmariadb-dev" in r.stderr and json.loads(out.read_text())["executor"] == "driver"
