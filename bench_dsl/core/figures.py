"""A figure of a result, declared once, in the module that owns it: its name and unit, its kind, how
it merges, how it is shown, whose it is, and where in a result it sits.

    Figure     one declaration
    Figures    a catalog of them: what a run measures, written whole into its result ("figures")
               so that a reader of the file (bench replay, compare, report) knows every figure,
               a workload's own too, without the workload's code

Owners: bench_dsl.measure.metrics (the client's counts and times; each throughput from its
MetricDecl, a workload's own among them), bench_dsl.measure.arrivals (an open-loop rate's),
bench_dsl.server.counters (what the server counts over a step, a workload's counters among them).
tests/unit/test_figures.py holds schema/result-v1.json to the declarations, both ways; the result's
checks (bench_dsl.results.conformance) check each figure by its declaration."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

# count: a number of events or seconds, summed; rate: a count per second or minute, computed from
# the merged counts; gauge: a reading or an extreme (the longest stall, the most users); latency: a
# time a transaction or an arrival took; ratio: a share or comparison, in %
Kind = Literal["count", "rate", "gauge", "latency", "ratio"]
# across workers, intervals and repeats: added up, the largest, the smallest, recomputed from the
# merged counts (a rate, a percentile, a share)
Merge = Literal["sum", "max", "min", "recompute"]
Side = Literal["client", "server", "host", "workload"]
# where a result holds it: "tx", in every transaction's figures and the whole's; "figures", in
# every interval, step and the summary; "step", in a step's row; "server", in a step's "server"
FigurePlace = Literal["tx", "figures", "step", "server"]
PLACES: tuple[FigurePlace, ...] = get_args(FigurePlace)


@dataclass(frozen=True, slots=True)
class Figure:
    name: str  # its key in the result
    unit: str  # "tps", "ms", "%", "s", "" (a count)
    kind: Kind
    merge: Merge
    side: Side
    place: FigurePlace
    description: str  # what it is, as the result's schema says it
    digits: int = 1  # shown with this many decimals
    integer: bool = False  # a whole number (else any number)
    nullable: bool = False  # null where it cannot be computed (a share of nothing)
    required: bool = False  # always there (else only where it applies)
    signed: bool = False  # may be below 0 (a queue that shrank, a difference); else never
    title: str = ""  # a table's row or a screen's label; default: the name
    # what a live display carries as the run goes: "tick", each tick's (a rate over the tick);
    # "step", a step's so far (bench_dsl.measure.metrics.Aggregate.so_far)
    live: tuple[str, ...] = ()

    @property
    def json_types(self) -> tuple[str, ...]:
        """Its types as JSON Schema names them."""
        return ("integer" if self.integer else "number", *(("null",) if self.nullable else ()))

    def to_json(self) -> dict[str, Any]:
        # its name and place are the catalog's keys (Figures.to_json)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()
                if k not in ("name", "place")}

    @classmethod
    def from_json(cls, name: str, d: dict[str, Any]) -> Figure | None:
        """A catalog entry of a result file; None when it is not one (a reader then does without it)."""
        try:
            fields: dict[str, Any] = {k: tuple(d[k]) if k == "live" else d[k] for k in d if k in _FIELDS}
            f = cls(name, **fields)
        except (TypeError, KeyError):
            return None
        ok = (isinstance(f.unit, str) and f.kind in get_args(Kind) and f.merge in get_args(Merge)
              and f.side in get_args(Side) and f.place in PLACES and isinstance(f.digits, int)
              and all(isinstance(w, str) for w in f.live))
        return f if ok else None


_FIELDS = frozenset(Figure.__dataclass_fields__) - {"name"}


class Figures:
    """Declarations by name, in the order given (a later one of the same name and place replaces
    the earlier: a workload's own counts over the core's)."""

    def __init__(self, figures: Iterable[Figure] = ()) -> None:
        self._by: dict[tuple[FigurePlace, str], Figure] = {}
        for f in figures:
            self._by[(f.place, f.name)] = f

    def __iter__(self) -> Iterator[Figure]:
        return iter(self._by.values())

    def __len__(self) -> int:
        return len(self._by)

    def __eq__(self, other: object) -> bool:  # the same declarations, whatever their order
        return isinstance(other, Figures) and self._by == other._by

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Figures({', '.join(f'{p}.{n}' for p, n in self._by)})"

    def __add__(self, other: Iterable[Figure]) -> Figures:
        return Figures([*self, *other])

    def at(self, place: FigurePlace) -> tuple[Figure, ...]:
        return tuple(f for f in self if f.place == place)

    def to_json(self) -> dict[str, dict[str, dict[str, Any]]]:
        """By place, then name: `{"figures": {"nopm": {"unit": "nopm", ...}}, ...}`."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for f in self:
            out.setdefault(f.place, {})[f.name] = f.to_json()
        return out

    @classmethod
    def from_json(cls, d: Any) -> Figures:
        """A result's catalog; what is not a declaration in it is left out."""
        if not isinstance(d, dict):
            return cls()
        return cls(f for place, named in d.items() if isinstance(named, dict)
                   for name, entry in named.items() if isinstance(entry, dict)
                   and (f := Figure.from_json(str(name), {**entry, "place": place})) is not None)


@dataclass(frozen=True, slots=True)
class Counted:
    """A step figure the server counts (a step's "server"): how much one of the counters read at the
    step's start and end grew, per minute. `client`: the client's figure of the same thing, which
    the step compares it with (`{name}_client_vs_server_pct`). A workload declares its own
    (WorkloadPlugin.counted: TPC-C's nopm, from the districts' next order ids; the
    counter is read by its Workload.server_counters)."""

    figure: Figure
    counter: str  # its key in what read() returns
    client: str | None = None

    def figures(self) -> tuple[Figure, ...]:
        f = self.figure
        if self.client is None:
            return (f,)
        return (f, Figure(f"{f.name}_client_vs_server_pct", "%", "ratio", "recompute", f.side, "server",
                          f"the client's {self.client} against the server's {f.name}: how far apart, % of the "
                          "server's", digits=2, nullable=True, signed=True))
