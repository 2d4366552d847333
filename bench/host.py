"""The machine and the tools a harness run used, as its result records them."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import psutil

from bench.clients import BENCH_CMD

ROOT = Path(__file__).resolve().parent.parent


def loadavg() -> str:
    with contextlib.suppress(OSError):
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "-"


def machine() -> dict[str, Any]:
    cpu = platform.processor() or "?"
    with contextlib.suppress(OSError, StopIteration), open("/proc/cpuinfo") as f:
        cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    os_name = platform.system()
    with contextlib.suppress(OSError, StopIteration), open("/etc/os-release") as f:
        os_name = next(ln.split("=", 1)[1].strip().strip('"') for ln in f if ln.startswith("PRETTY_NAME="))
    return {"hostname": platform.node(), "cpu_model": cpu, "cpu_logical": psutil.cpu_count(),
            "cpu_physical": psutil.cpu_count(logical=False),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "os": os_name, "kernel": platform.release(), "python": platform.python_version(),
            "loadavg_start": loadavg()}


def tools(workdir: Path, env: dict[str, str]) -> dict[str, Any]:
    def out(cmd: list[str], cwd: Path) -> str | None:
        try:
            r = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if r.returncode != 0:
            return None
        return (r.stdout or r.stderr).strip() or None

    version = out(["sysbench", "--version"], workdir)
    dirty = out(["git", "status", "--porcelain", "--", "bench_dsl", "grammar"], ROOT)
    return {"sysbench": version, "bench_dsl": out([*BENCH_CMD, "--version"], workdir),
            "commit": out(["git", "rev-parse", "--short", "HEAD"], ROOT), "engine_dirty": bool(dirty)}
