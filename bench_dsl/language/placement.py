"""Where a scenario's users run: `workers` (processes on this machine, or actors on a cluster)
and what a lost worker does to the run (`on worker loss`)."""

from __future__ import annotations

import importlib.util

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
        return f"workers {kind} needs Ray, which is not installed", "pip install 'bench-dsl[ray]'"
    if not targeted:
        return ("a scenario without a target cannot run on a cluster: the throwaway server listens on this "
                "machine's loopback only", 'target env("BENCH_DSN"), a server every node of the cluster reaches')
    return None


def worker_loss(c: Checker, item: ast.Item | None) -> str:
    if item is None:
        return "fail"
    assert isinstance(item.value, ast.Word)
    if item.value.name not in ("fail", "continue"):
        c.error(f"on worker loss is fail or continue, not '{item.value.name}'", item.value.span,
                "on worker loss continue (the run goes on with the other workers), or fail (the default)")
        return "fail"
    return item.value.name
