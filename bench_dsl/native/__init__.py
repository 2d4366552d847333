"""Which way statements are sent, chosen by BENCH_RAWEXEC:

- unset or `1`: workloads that describe their statements (sysbench's tests, custom) run on the C
  executor (src/*.c, executor.py): a thread per user over libmariadb's prepared statements
  (`"executor": "libmariadb"` in the result); the others (TPC-C) through asyncmy;
- `0`: every statement through asyncmy (`"driver"`), to compare with.

A package built where libmariadb's headers were missing (mariadb_config not found) has no C
executor: everything goes through asyncmy, and each run says so once (`problem`)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

compiled: ModuleType | None  # the extension, whether or not it runs
try:
    compiled = importlib.import_module("bench_dsl.native._native")
except ImportError:  # only a build without libmariadb
    compiled = None

_mode = os.environ.get("BENCH_RAWEXEC", "1").strip()
raw_executor: bool = compiled is not None and _mode != "0"
"""Workloads that describe their statements run on the C executor."""

problem: str | None = (
    "BENCH_RAWEXEC is 0 (asyncmy for every statement) or 1 (the default); "
    f"{_mode!r} is not used any more and runs the default" if _mode not in ("0", "1") else
    "the C executor was not built (libmariadb's headers were missing when bench-dsl was installed): "
    "every statement goes through asyncmy, slower; `apt install libmariadb-dev` and reinstall "
    "bench-dsl for the fast path" if compiled is None else None)
"""What a run warns about once, or None."""
