"""What a run was asked, as the `Begin` event carries it (bench_dsl.engine.outcome.scenario_info
makes it): the scenario's name, file and text and its parameters (passwords removed), its seed, its
workload, its stop conditions and expectations as written, its plan, its load axis and what its load
profile asked beyond the phases. The result's "scenario" is its JSON. Types only, no driver: the
events, a replay and the displays load it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench_dsl.engine.phases import Plan, PlannedRun

# the keys of the result's "scenario" that are fields here; any other is a profile's own (`asked`)
_FIELDS = ("name", "file", "text", "parameters", "seed", "workload", "stop", "expect", "plan", "load_axis")


def _texts(v: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in v) if isinstance(v, list | tuple) else ()


@dataclass(frozen=True, slots=True)
class ScenarioInfo:
    name: str = ""
    file: str = ""
    text: str = ""  # the .bench file as run, passwords replaced by ***
    parameters: dict[str, Any] = field(default_factory=dict)  # -D and `let` values, passwords removed
    seed: int | None = None  # None: a hand-made result that says none
    # the workload as its kind describes it (bench_dsl.workloads: its kind's own keys), without the two below
    workload: dict[str, Any] = field(default_factory=dict)
    transactions: tuple[str, ...] | None = None  # its transactions' names (None: a result that lists none)
    digest: str | None = None  # outcome.workload_digest (None: a result of before it was written)
    stop: tuple[str, ...] = ()  # the stop conditions, as written
    expect: tuple[str, ...] = ()
    plan: PlannedRun = field(default_factory=lambda: PlannedRun(Plan((), 0)))
    load_axis: str | None = None  # bench_dsl.core.axis's name (None: a result of before it was said)
    asked: dict[str, Any] = field(default_factory=dict)  # what its load profile asked beyond the phases ("rate")

    def to_json(self) -> dict[str, Any]:
        workload = dict(self.workload)
        if self.transactions is not None:
            workload["transactions"] = list(self.transactions)
        if self.digest is not None:
            workload["digest"] = self.digest
        return {"name": self.name, "file": self.file, "text": self.text, "parameters": dict(self.parameters),
                "seed": self.seed, "workload": workload, "stop": list(self.stop), "expect": list(self.expect),
                "plan": self.plan.to_json(), **({"load_axis": self.load_axis} if self.load_axis is not None else {}),
                **self.asked}

    @classmethod
    def from_json(cls, d: Any) -> ScenarioInfo:
        """A result's "scenario"; what it lacks (a hand-made one, one of before) is empty, and what it
        holds beyond the fields is kept as asked, so that none of it is lost when written again."""
        d = d if isinstance(d, dict) else {}
        workload = dict(d.get("workload") or {})
        names, digest, seed, axis = workload.pop("transactions", None), workload.pop("digest", None), \
            d.get("seed"), d.get("load_axis")
        return cls(str(d.get("name") or ""), str(d.get("file") or ""), str(d.get("text") or ""),
                   dict(d.get("parameters") or {}), int(seed) if isinstance(seed, int | float) else None,
                   workload, _texts(names) if names is not None else None, str(digest) if digest is not None else None,
                   _texts(d.get("stop")), _texts(d.get("expect")), PlannedRun.from_json(d.get("plan")),
                   str(axis) if axis is not None else None, {k: v for k, v in d.items() if k not in _FIELDS})
