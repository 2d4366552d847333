"""Where a scenario's users run: `workers` (processes on this machine, or actors on a cluster)
and what a lost worker does to the run (`on worker loss`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from bench_dsl.language import syntax as ast
from bench_dsl.language.values import Checker, span_of


class NamedFleet(Protocol):
    """What the language asks of a fleet that `workers NAME [N]` names (bench_dsl.fleet.registry's
    kinds, handed in by the caller as the workload kinds are: the language never imports the fleets,
    which are built on it)."""

    @property
    def name(self) -> str: ...
    @property
    def usage(self) -> str: ...  # how `workers` names it, in a hint: "workers ray (a Ray cluster's CPUs)"
    def problem(self, targeted: bool) -> tuple[str, str] | None: ...  # why it cannot run users now: (message, hint)


Fleets = Mapping[str, NamedFleet]


def workers(c: Checker, item: ast.Item | None, targeted: bool, fleets: Fleets) -> tuple[int | None, str | None]:
    """Worker processes, or a named fleet's workers (actors on a cluster): (how many, None: auto;
    the named fleet, None: processes here)."""
    if item is None:
        return None, None
    if isinstance(item.value, ast.Word) and item.value.name in fleets:
        kind = fleets[item.value.name]
        n = None if item.more is None else c.number(item.more, f"workers {kind.name}", integer=True, minimum=1)
        if (why := kind.problem(targeted)) is not None:
            c.error(why[0], item.span, why[1])
        return (int(n) if n is not None else None), kind.name
    hint = ", ".join(("workers auto (one per core), workers 4", *(k.usage for k in fleets.values())))
    if item.more is not None:
        c.error("workers takes one value here", span_of(item.more), hint)
    if isinstance(item.value, ast.Word):
        if item.value.name != "auto":
            c.error(f"workers is auto, a number of processes{''.join(f' or {n}' for n in fleets)}, "
                    f"not '{item.value.name}'", item.value.span, hint)
        return None, None
    n = c.number(item.value, "workers", integer=True, minimum=1)
    return (int(n) if n is not None else None), None


def worker_loss(c: Checker, item: ast.Item | None) -> str:
    if item is None:
        return "fail"
    assert isinstance(item.value, ast.Word)
    if item.value.name not in ("fail", "continue"):
        c.error(f"on worker loss is fail or continue, not '{item.value.name}'", item.value.span,
                "on worker loss continue (the run goes on with the other workers), or fail (the default)")
        return "fail"
    return item.value.name
