"""Where a scenario's users run: `workers` (processes on this machine, or actors on a cluster)
and what a lost worker does to the run (`on worker loss`)."""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys

from bench_dsl.language import syntax as ast
from bench_dsl.language.values import Checker, span_of


def workers(c: Checker, item: ast.Item | None, targeted: bool) -> tuple[int | None, str | None]:
    """Worker processes, or actors on a cluster: (how many, None: auto; the cluster's kind, None: here)."""
    if item is None:
        return None, None
    if isinstance(item.value, ast.Word) and item.value.name in CLUSTERS:
        n = None if item.more is None else c.number(item.more, "workers ray", integer=True, minimum=1)
        if (why := cluster_problem(item.value.name, targeted)) is not None:
            c.error(why[0], item.span, why[1])
        return (int(n) if n is not None else None), item.value.name
    if item.more is not None:
        c.error("workers takes one value here", span_of(item.more), _WORKERS_HINT)
    if isinstance(item.value, ast.Word):
        if item.value.name != "auto":
            c.error(f"workers is auto, a number of processes or ray, not '{item.value.name}'", item.value.span,
                    _WORKERS_HINT)
        return None, None
    n = c.number(item.value, "workers", integer=True, minimum=1)
    return (int(n) if n is not None else None), None


_WORKERS_HINT = "workers auto (one per core), workers 4, workers ray (a Ray cluster's CPUs), workers ray 8"
CLUSTERS = ("ray",)


def cluster_problem(kind: str, targeted: bool) -> tuple[str, str] | None:
    """Why users cannot run on a cluster of `kind` (message, hint), or None. Said by `bench check`
    for a file's `workers ray` (targeted: the file has a target line), and by `bench run` for the
    file's or --workers' (targeted: a server to run against, from the file or --target)."""
    if importlib.util.find_spec(kind) is None:  # found without importing it: Ray takes a second to import
        return f"workers {kind} needs Ray, which is not installed", INSTALL
    if (why := _unusable(kind)) is not None:
        return f"workers {kind} needs Ray, and {why[0]}", why[1]
    if not targeted:
        return ("a scenario without a target cannot run on a cluster: the throwaway server listens on this "
                "machine's loopback only", 'target env("BENCH_DSN"), a server every node of the cluster reaches')
    return None


INSTALL = "pip install 'bench-dsl[ray]'"
IMPORT_TIMEOUT_S = 120.0  # Ray imports in a second or two; a machine under load may take many times that

# Run in a fresh interpreter with this process's sys.path: whatever `import ray` finds there is what
# a run would import. Its one line on stdout says what is wrong: `broken` or `hidden`, a tab, why.
_IMPORT = """
import json, sys
sys.path[:] = json.loads(sys.argv[2])
try:
    mod = __import__(sys.argv[1])
except BaseException as exc:
    first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    print(f"broken\tit does not import ({type(exc).__name__}{': ' + first[:200] if first else ''})")
    raise SystemExit(1)
where = getattr(mod, "__file__", None) or ", ".join(getattr(mod, "__path__", ()))
if not callable(getattr(mod, "init", None)) or not isinstance(getattr(mod, "__version__", None), str):
    print(f"hidden\tthe {sys.argv[1]} that imports here is not Ray ({where}): a folder or module of that name "
          "earlier on the path hides it")
    raise SystemExit(1)
"""


@functools.cache
def _unusable(kind: str) -> tuple[str, str] | None:
    """Why the Ray that `import ray` would find cannot run users (a folder named ray/ on the path,
    a broken install), or None: found out by importing it, in another process, as the checking
    of a scenario loads no Ray (and a broken one may fail in ways no import of it here should).
    Once a process: a study loads its file once per configuration."""
    reinstall = f"{INSTALL}, again, for this Python ({sys.executable})"
    try:
        r = subprocess.run([sys.executable, "-I", "-c", _IMPORT, kind, json.dumps(sys.path)], capture_output=True,
                           text=True, timeout=IMPORT_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"importing it took more than {IMPORT_TIMEOUT_S:.0f} s", reinstall
    except OSError as exc:
        return f"it could not be imported to check it ({exc.strerror or exc})", reinstall
    if r.returncode == 0:
        return None
    verdict, _, said = (r.stdout.strip().splitlines() or [""])[-1].partition("\t")
    if verdict == "hidden":
        return said, "rename that folder or module, or run bench from another directory"
    return said or f"importing it failed (exit status {r.returncode})", reinstall


def worker_loss(c: Checker, item: ast.Item | None) -> str:
    if item is None:
        return "fail"
    assert isinstance(item.value, ast.Word)
    if item.value.name not in ("fail", "continue"):
        c.error(f"on worker loss is fail or continue, not '{item.value.name}'", item.value.span,
                "on worker loss continue (the run goes on with the other workers), or fail (the default)")
        return "fail"
    return item.value.name
