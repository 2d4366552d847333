"""The `ray` fleet as the language, the CLI and the plan see it (bench_dsl.fleet.registry): its name
in `workers ray [N]`, its option (the cluster's address), and what it refuses before a run starts:
no Ray installed, a Ray that does not import, a scenario without a target. The fleet itself, which
imports Ray when it starts, is bench_dsl.fleet.ray."""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys
from typing import TYPE_CHECKING

from bench_dsl.fleet.kinds import FleetKind, FleetOption, FleetSetup

if TYPE_CHECKING:
    from bench_dsl.fleet.base import Fleet

NAME = "ray"
INSTALL = "pip install 'bench-dsl[ray]'"
IMPORT_TIMEOUT_S = 120.0  # Ray imports in a second or two; a machine under load may take many times that


def problem(targeted: bool) -> tuple[str, str] | None:
    """Why users cannot run on a Ray cluster (message, hint), or None. Said by `bench check` for a
    file's `workers ray` (targeted: the file has a target line), and by `bench run` for the file's or
    --workers' (targeted: a server to run against, from the file or --target)."""
    if importlib.util.find_spec(NAME) is None:  # found without importing it: Ray takes a second to import
        return f"workers {NAME} needs Ray, which is not installed", INSTALL
    if (why := _unusable(NAME)) is not None:
        return f"workers {NAME} needs Ray, and {why[0]}", why[1]
    if not targeted:
        return ("a scenario without a target cannot run on a cluster: the throwaway server listens on this "
                "machine's loopback only", 'target env("BENCH_DSN"), a server every node of the cluster reaches')
    return None


# Run in a fresh interpreter with this process's sys.path: whatever `import ray` finds there is what
# a run would import. Its one line on stdout says what is wrong: `broken` or `hidden`, a tab, why.
_IMPORT = """
import json, sys
sys.path[:] = json.loads(sys.argv[2])
try:
    mod = __import__(sys.argv[1])
except BaseException as exc:
    first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    print(f"broken\\tit does not import ({type(exc).__name__}{': ' + first[:200] if first else ''})")
    raise SystemExit(1)
where = getattr(mod, "__file__", None) or ", ".join(getattr(mod, "__path__", ()))
if not callable(getattr(mod, "init", None)) or not isinstance(getattr(mod, "__version__", None), str):
    print(f"hidden\\tthe {sys.argv[1]} that imports here is not Ray ({where}): a folder or module of that name "
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


def _build(s: FleetSetup) -> Fleet:
    from bench_dsl.fleet.ray import RayFleet  # its hdrh and psutil, and Ray once it starts: only for a Ray run

    return RayFleet(s.sc, s.dsn, s.workload.names, s.workers or None, s.max_users, s.options.get("address"), s.log)


def _planned(workers: int | None) -> str:
    return f"{workers} actor(s)" if workers else "one actor per CPU the cluster offers"


KIND = FleetKind(
    NAME, _build, named=True, usage="workers ray (a Ray cluster's CPUs), workers ray 8", problem=problem,
    planned=_planned, modules=("bench_dsl.fleet.ray", "bench_dsl.fleet.ray_actor"),
    options=(FleetOption("--ray-address", "address", "HOST:PORT",
                         "with workers ray: the cluster's head (default: RAY_ADDRESS, else the Ray node on this "
                         "machine)"),))
