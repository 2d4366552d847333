"""A load axis: what a run's load is measured in, declared once by the load profiles that run on it
(bench_dsl.engine.profiles: the closed-loop ones on users, the open-loop ones on an offered rate),
written into each result (its scenario's "load_axis") and read by everything that says a load: the
judge keeps its one saturation point on it, and the fold, the verdict, the console, the summary,
compare, the report and the live screen say it in its words. None of them knows the axes' keys."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bench_dsl.core.live_figures import TickFigures


def _no_words(figures: Mapping[str, Any]) -> str:
    return ""


@dataclass(frozen=True, slots=True)
class LiveCell:
    """A cell of the live screen's headline that a load adds (an asked rate's offered, achieved ...):
    its label, its value and how it is written (a rate, a time in ms, or `text` as it is), and its
    tone, which the screen colours. `narrow`: given up in a narrow headline, first ("early": what
    another cell says too) or once the screen's own have gone ("late"); "": kept to the last."""

    label: str
    value: float | None = None
    form: Literal["rate", "ms", "decimal", "text"] = "rate"
    tone: Literal["", "good", "warn", "bad"] = ""
    text: str = ""
    narrow: Literal["", "early", "late"] = ""


def _no_cells(tick: TickFigures, users: int, interval: Mapping[str, Any]) -> tuple[LiveCell, ...]:
    return ()


@dataclass(frozen=True, slots=True)
class LoadAxis:
    name: str  # as a result names it ("users", "rate")
    key: str  # the field of a step row, a by_users entry and a saturation that holds a point on it
    unit: str  # after a number: "8 users", "8000 tps"
    title: str  # a chart's x axis
    heading: str  # a chart's title: "Throughput against users"
    loop: str  # the kind of load, in a sentence
    plural: str  # its points, in a sentence: "users compared: 4, 8", "rates compared: 500, 1000 tps"
    # the figure of a row that says the load it was offered where the row has no `key` (an interval
    # of a linear rate, a summary): None when the key is in every row
    offered: str | None = None
    # the verdict's words when no stop condition was declared, where that means the point says
    # nothing (a rate that none judged met them all, whatever it achieved): None where it still does
    unjudged: str | None = None
    # figures of the saturation point's step that the saturation carries beside the point
    point_figures: tuple[str, ...] = ()
    # a row's own load figures, in the words of a console line ("offered 500.0/s dropped 0.0/s ...")
    row_words: Callable[[Mapping[str, Any]], str] = _no_words
    # the figure a live chart plots against this axis beside throughput: what the load asked (None: the point)
    asked: str | None = None
    whole: bool = False  # its points are whole numbers (users): read and written as integers
    # the report's words: what its saturation point is, and what a latency against it runs from
    point_meaning: str = ""
    latency_from: str = ""  # "" : from the send; a rate's: ", from the moment each was due"
    # a log scale only for points that multiply (x2 steps) where they as often climb by +N (rates)
    log_if_multiplying: bool = False
    # what the point's figures (point_figures) say beside it when no condition judged it: " offered,
    # 4,980 tps achieved (0.2% dropped)"
    point_words: Callable[[Mapping[str, Any]], str] = _no_words
    # where a result's scenario holds the point a run without steps was asked to reach (a fixed or
    # linear rate's end): the same in every repeat, where what each measured differs by its noise
    whole_run_point: tuple[str, ...] = ()
    # the live headline's cells of this load, from the last tick's figures and users and the last
    # interval's row (a rate's: offered, achieved, dropped ...); where they say its throughput
    # (asked), the screen's own tps goes first in a narrow headline
    live_cells: Callable[[TickFigures, int, Mapping[str, Any]], tuple[LiveCell, ...]] = _no_cells

    def asked_of(self, doc: Mapping[str, Any]) -> float | None:
        """The point a result's run without steps was asked to reach (whole_run_point), or None."""
        if not self.whole_run_point:
            return None
        v: Any = doc.get("scenario")
        for key in self.whole_run_point:
            v = v.get(key) if isinstance(v, Mapping) else None
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def words(self, value: float | None) -> str:
        return "-" if value is None else f"{number(value)} {self.unit}"

    def at(self, row: Mapping[str, Any]) -> float | None:
        """Where on the axis a row (a step, a summary counted as one, an interval) was measured."""
        v = row.get(self.key)
        if v is None and self.offered is not None:
            v = row.get(self.offered)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return None
        return int(v) if self.whole else float(v)


def number(v: float) -> str:
    """A point of an axis as written: 8, 4000 (not 4e+03 nor 4,000.0), 12.5."""
    return f"{v:.0f}" if float(v).is_integer() else f"{v:g}"
