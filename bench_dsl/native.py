"""Which implementation of the hot path runs, chosen by BENCH_RAWEXEC:

- unset, `1` or `thread`: the raw executor's C core on a thread per user doing blocking reads and writes
  (blocking.py; the result document says `"executor": "raw-thread"`), the fastest way measured;
- `loop`: the same C core on the event loop, every user of a process on one thread (`"raw"`);
- `py`: the C core's pure-Python twins in rawexec.py and metrics.py, which define what the C code
  must do and which the tests hold it to (`"raw-py"`); so does a build without the extension;
- `0`: no raw executor at all, every statement through asyncmy (`"driver"`).

The other three exist to compare with, or to rule the default out."""

from __future__ import annotations

import os
from types import ModuleType

compiled: ModuleType | None  # the extension, whether or not it runs
try:
    from bench_dsl import _rawcore as compiled
except ImportError:  # pragma: no cover - only a build without its extension
    compiled = None

_mode = os.environ.get("BENCH_RAWEXEC", "1")
core: ModuleType | None = None if _mode == "py" else compiled  # what runs
raw_executor: bool = _mode != "0"
threaded: bool = core is not None and _mode in ("1", "thread")
