"""Which implementation of the hot path runs: the C extension (bench_dsl/_rawcore.c, built by
`pip install .`) or its pure-Python twins in rawexec.py and metrics.py, which define what the C
code must do and which the tests hold it to. `BENCH_RAWEXEC=py` chooses the twins (to compare, or to
rule the extension out); so does a build without the extension, and the result document then says
`"executor": "raw-py"`."""

from __future__ import annotations

import os
from types import ModuleType

compiled: ModuleType | None  # the extension, whether or not it runs
try:
    from bench_dsl import _rawcore as compiled
except ImportError:  # pragma: no cover - only a build without its extension
    compiled = None

core: ModuleType | None = None if os.environ.get("BENCH_RAWEXEC") == "py" else compiled  # what runs
# BENCH_RAWEXEC=0: no raw executor at all, every statement through asyncmy (to compare, or to rule it out)
raw_executor: bool = os.environ.get("BENCH_RAWEXEC", "1") != "0"
