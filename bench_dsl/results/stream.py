"""The event stream of `bench run --jsonl`: every event of the run, one JSON object a line, each
with its `format_version`, so that `bench replay` plays the run back exactly as the sinks met it.

    encode(event) -> dict           a line's object (JsonLinesSink writes it)
    read_stream(path) -> Stream     the events back, and what was wrong with the end of the file

A line is the event's own JSON form (engine/events.py, `to_json`) with `format_version` after its
`type`, and what that form leaves out and a display reads: the server of `started`, the end time,
executor and workload report of `finished`. Histograms stay in the result document: a `totals`
line holds the summary without them, as a `step` line does (they are what the report draws, never
what a display shows).

A stream written before lines had a version (six event types) is still read: it is marked
`versioned` False, and bench_dsl/results/replay.py derives what it lacks.

A run killed while writing leaves its last line cut: the stream is read up to its last whole line
and the cut one is named in `warnings`. A bad line anywhere else is an error: that is not a cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_dsl.core.errors import error_reason
from bench_dsl.engine import events as ev
from bench_dsl.results.conformance import check_numbers, check_row
from bench_dsl.results.read import BadResult, parse_json, read_bytes

STREAM_VERSION = 1
GIVE = "give a result (.json) or an event stream (.jsonl) of bench run"


def encode(event: ev.Event) -> dict[str, Any]:
    """The object of one line of the stream."""
    out: dict[str, Any] = {"type": event.type, "format_version": STREAM_VERSION, **event.to_json()}
    match event:
        case ev.Started():
            out["server"] = event.server.to_json() if event.server is not None else {}
        case ev.Finished():
            out.update(finished_at=event.finished_at, executor=event.executor, workload_report=event.workload_report)
        case ev.Totals() if event.summary is not None:
            out["summary"] = {k: v for k, v in event.summary.items() if k != "histograms"}
    return out


def decode(obj: Any) -> ev.Event:
    """An event back from a line's object (ValueError, KeyError, TypeError: not an event)."""
    if not isinstance(obj, dict):
        raise ValueError("a line is a JSON object")
    d = dict(obj)
    version = d.pop("format_version", None)
    if version is not None and version != STREAM_VERSION:
        raise ValueError(f"event stream format version {version!r}; this bench-dsl reads version {STREAM_VERSION}")
    kind = d.get("type")
    if kind in ("interval", "step"):  # checked before it becomes a row: a row's fields are typed
        problem = check_row(kind, {k: v for k, v in d.items() if k not in ("type", "step_so_far")})
    else:  # any event's figures: a number beyond a float fails the float() that meets it
        problem = check_numbers(d)
    if problem is not None:
        raise ValueError(f"{problem.where}: {problem.what}")
    return ev.from_json(d)


@dataclass(slots=True)
class Stream:
    events: list[ev.Event] = field(default_factory=list)
    versioned: bool = False  # every line says its format version: a stream recorded whole
    warnings: list[str] = field(default_factory=list)


def read_stream(path: Path, data: bytes | None = None) -> Stream:
    """The events of an event stream file (read as read.py reads any result: a regular file only,
    bounded), up to its last whole line; BadResult naming the line that is not an event."""
    if data is None:
        data, _ = read_bytes(path)
    lines = data.split(b"\n")
    whole = data.endswith(b"\n")
    out = Stream(versioned=True)
    numbered = [(n, ln) for n, ln in enumerate(lines, 1) if ln.strip()]
    for i, (n, line) in enumerate(numbered):
        last = i == len(numbered) - 1
        try:
            obj = parse_json(path, line, n)
            e = decode(obj)
        except BadResult as exc:
            if last and not whole and out.events:  # a stream begun and cut, not a file of something else
                out.warnings.append(f"warning: {path}: line {n} is cut short (the run was stopped while writing "
                                    f"it?): replayed up to line {numbered[i - 1][0] if i else 0}")
                break
            raise BadResult(path, f"{exc.problem}; {GIVE}", f"line {n}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadResult(path, f"not an event ({error_reason(exc)}); {GIVE}", f"line {n}") from None
        out.versioned = out.versioned and isinstance(obj, dict) and "format_version" in obj
        out.events.append(e)
    if not out.events:
        raise BadResult(path, f"is empty: {GIVE}")
    return out
