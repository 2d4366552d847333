"""The verdict of a run in words: the one wording the live screen, the console and `bench replay`
say it in, from the `Finished` event's saturation, stop and expectations (the judge's figures; only
put into words here, never worked out).

    verdict_lines(saturation, stop) -> [line, ...]   where the saturation point stands, what ended the
                                                      run, and whether bench-dsl itself was the limit
    expect_line(expectation) -> line                  one `expect`, passed or failed, with its figure

A line is a list of (text, tone) pieces; each display gives the tones its own styles:
    plain | dim (what the line is about) | strong | good | bad (what ended the run, a failure)
    | error (what went wrong, said by the server or the system) | warn | note

The numbers of a stop condition (fmt_num, fmt_latency) are written as the conditions table writes them.
"""

from __future__ import annotations

from typing import Any

from bench_dsl.core.json_object import Json
from bench_dsl.core.numbers import fmt_num
from bench_dsl.engine.profiles.registry import axis_of
from bench_dsl.engine.stopping import StopReason

Line = list[tuple[str, str]]


def fmt_latency(ms: float) -> str:
    """Milliseconds, or seconds from one second up (a `p99 > 10s` limit reads 10s, not 10,000ms)."""
    return f"{fmt_num(ms / 1000)}s" if abs(ms) >= 1000 else f"{fmt_num(ms)}ms"


def verdict_lines(saturation: Json | None, stop: StopReason | None) -> list[Line]:
    """Where the saturation point stands, what ended the run, and (when it was so) that bench-dsl
    itself was the limit, in the judge's own words."""
    sat = saturation or {}
    lines = [_head(sat), _ended(stop)]
    if isinstance(b := sat.get("bottleneck"), dict) and b.get("words"):  # what ran out, with what was ruled out
        lines.append(ran_out_line(b))
    if sat.get("limited_by") == "client":  # the judge's words: CPU or scheduling lag, with the figure
        reason = str(sat.get("reason") or "")
        lines.append([(reason[reason.find("bench-dsl itself"):] if "bench-dsl itself" in reason else reason, "warn")])
    return lines


def _head(sat: Json) -> Line:
    step = sat.get("step")
    ax = axis_of({"saturation": sat})  # the point on the run's load axis: users, or an offered rate
    point = ax.at(sat)
    said = f"{_n(point)} {ax.unit}"
    if sat.get("saturated"):
        if point is None:
            return [(f"saturated below the first step's {ax.name}", "bad")]
        at_least = "at least " if sat.get("limited_by") == "client" else ""  # the server carries at least that
        return [(f"saturation point: {at_least}{said}", "good"),
                (f" (step {step}, the last step that met every condition)", "dim")]
    if point is not None and ax.unjudged is not None and sat.get("stop_condition_count") == 0:
        # nothing judged the point: what it achieved is the finding, never "met every condition"
        return [(f"no stop condition judged the {ax.name}: {said}{ax.point_words(sat)}", "warn"),
                (f" (step {step})", "dim")]
    if point is not None:
        return [(f"no stop condition fired: {said} met every condition", "strong"), (f" (step {step})", "dim")]
    return [("no step was completed", "warn")]


def _ended(stop: StopReason | None) -> Line:
    if stop is None:
        return [("the run went through every step of its plan", "dim")]
    if stop.kind == "stop_condition":
        unit = stop.unit or ""
        if stop.condition_kind == "threshold" and unit == "ms":
            how = f": measured {_latency(stop.value)} against {_latency(stop.limit)}"
        elif stop.condition_kind == "threshold":
            how = f": measured {_n(stop.value)}{unit} against {_n(stop.limit)}{unit}"
        else:
            how = f": this step {_n(stop.value)}, the step before {_n(stop.previous)}"
        return [("ended by ", "dim"), (str(stop.condition), "bad"), (how, "plain"),
                (f", step {stop.step} at {stop.users} users", "dim")]
    if stop.kind == "connections_refused":
        return [("ended by ", "dim"), ("the server refusing connections", "bad"),
                (f": {stop.connected} of {stop.users} users connected, {stop.message}", "plain"),
                (f", step {stop.step}", "dim")]
    if stop.kind == "users_not_connected":
        return [("ended by ", "dim"), ("users still connecting", "bad"),
                (f": {stop.connected} of {stop.users} users had a connection at the step's end", "plain"),
                (f", step {stop.step}", "dim")]
    if stop.kind == "client_limit":
        return [("ended by ", "dim"), ("the client machine's limit on threads", "bad"),
                (f": {stop.connected} of {stop.users} users had a connection, {stop.message}", "plain"),
                (f", step {stop.step}", "dim")]
    if stop.kind == "interrupted":
        return [("ended: stopped on request; everything measured up to then is saved", "note")]
    message = [(f": {stop.message}", "error")] if stop.message else []
    return [(f"ended early ({stop.kind})", "bad"), *message]


def ran_out_line(bottleneck: Json) -> Line:
    """What ran out in a step (its result's `bottleneck`): "what ran out: limited by row locks (...);
    not server CPU (...) (high confidence)"."""
    return [("what ran out: ", "dim"), (str(bottleneck.get("words")), "warn"),
            (f" ({bottleneck.get('confidence')} confidence)", "dim")]


def ran_out_lines(bottleneck: Json) -> list[Line]:
    """What ran out in a step, as a panel says it: the finding and its confidence, each piece of its
    evidence against its limit (or the earlier step's value), and what was ruled out."""
    head = str(bottleneck.get("words") or "").partition("; not ")[0]  # what was ruled out is listed below
    confidence = str(bottleneck.get("confidence") or "")
    # its confidence first: a short panel cuts the end of a long finding
    lines: list[Line] = [[(f"{confidence} confidence: ", {"high": "bad", "medium": "warn"}.get(confidence, "dim")),
                          (head, "strong")]]
    for e in bottleneck.get("evidence") or []:
        if not isinstance(e, dict):
            continue
        against = (f" (limit {e.get('op') or ''} {_n(e['limit'])})" if e.get("limit") is not None else
                   f" (was {_n(e['baseline'])})" if e.get("baseline") is not None else "")
        value = "-" if e.get("value") is None else _n(e["value"])
        lines.append([("  ", "plain"), (f"{e.get('figure')} {value} {e.get('unit') or ''}".rstrip(),
                                        "warn" if e.get("corroborates") else "plain"), (against, "dim")])
    ruled = [str(r.get("short") or r.get("class")) for r in bottleneck.get("ruled_out") or [] if isinstance(r, dict)]
    if ruled:
        lines.append([("not: ", "dim"), ("; ".join(ruled), "dim")])
    return lines


def expect_line(e: Json) -> Line:
    """One expectation: `expect saturation >= 8 users: FAIL (measured 4.0): why`."""
    passed = bool(e.get("passed"))
    why = [(f": {e['reason']}", "error")] if e.get("reason") else []
    return [("expect ", "dim"), (str(e.get("expect")), "plain"),
            (": pass" if passed else ": FAIL", "good" if passed else "bad"),
            (f" (measured {e.get('value')})", "dim"), *why]


def text(line: Line) -> str:
    """A line without its tones (a log, a test)."""
    return "".join(t for t, _ in line)


def _n(v: Any) -> str:
    return fmt_num(float(v)) if isinstance(v, int | float) else str(v)


def _latency(v: Any) -> str:
    return fmt_latency(float(v)) if isinstance(v, int | float) else str(v)
