"""A finished run as an event stream again, for `bench replay`: the same events the live screen and
the console read, timed by the run's own seconds, never touching a server.

    load(path) -> [(second of the run, event), ...]     a result document (.json) or a --jsonl stream
    player.Player(timed, speed, sinks).execute()          plays them to sinks at `speed` times the pace

A `--jsonl` stream (stream.py) is the run's events, every one of them: it is played verbatim,
nothing derived. A result document is the fallback: it is folded back into the events that wrote it
(`document.ResultDocument` of them gives the same document again), and so is, as far as it goes, a
stream written before every event went into it (six types). What they do not store is derived from
what they do, and differs from the live run so:

- ticks: the live run sent one a second; the replay makes one a second from each report interval,
  all with that interval's figures (an open-loop rate's offered, achieved, dropped and busy among
  them; a stall as the step's longest so far), so the throughput chart is flat within an interval. The phase's
  remaining seconds are the plan's (a hold the person lengthened with h counts down to 0 and waits).
- the step so far beside each interval: counts, throughput and errors of the step's intervals so
  far; its percentiles only once the step has ended (per-interval histograms are not stored).
- the stop conditions: the judge's word at each step's end (the step's verdicts; ok or near is the
  judge's own `state_of`) and when one fired; their live values between steps are not stored, and a
  condition never judged at a step's end (`for D`, or none ended) is listed without a limit.
- the log: the phase lines the run wrote, its warnings (when each was said is not stored: those
  before the stop's own at the start, those after it with the stop) and the errors its end implies.
- when loading ended and the server came up are not stored: the prepare ends as the warmup begins.
An old stream recorded in full (tests/fixtures/record.py) already has ticks and conditions: played as is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench_dsl.core.cluster_info import ClusterInfo
from bench_dsl.core.figures import Figures
from bench_dsl.core.json_object import Json
from bench_dsl.core.live_figures import StepSoFar, TickFigures, TxFigures
from bench_dsl.core.prepare_report import PrepareReport
from bench_dsl.core.server_info import ServerInfo
from bench_dsl.engine import events as ev
from bench_dsl.engine.client_limit import CLIENT_LAG_MS
from bench_dsl.engine.judge import state_of
from bench_dsl.engine.phases import PlannedRun
from bench_dsl.engine.rows import IntervalRow, StepRow
from bench_dsl.engine.saturation import SaturationPoint
from bench_dsl.engine.scenario_info import ScenarioInfo
from bench_dsl.engine.stopping import StopReason
from bench_dsl.engine.study_configuration import StudyConfiguration
from bench_dsl.language import model as m
from bench_dsl.language.comparisons import CORE_COMPARISONS
from bench_dsl.measure.schedlag import worst_lag
from bench_dsl.measure.stalls import STALL_SHOWN_S
from bench_dsl.results.conformance import CORE_FIGURES
from bench_dsl.results.read import RESULT_FORMAT, BadResult, parse_json, read_bytes, result_of
from bench_dsl.results.stream import read_stream

Timed = tuple[float, ev.Event]


# reading --------------------------------------------------------------------------------------------
def load(path: str | Path, warnings: list[str] | None = None) -> list[Timed]:
    """The events of a result document or of a `--jsonl` event stream, each with its second of the
    run. Read by read.py's rules (a regular file, bounded; a result checked against its schema); a
    file that is neither is BadResult. What was wrong but could be passed over (a stream's last line
    cut short) is added to `warnings`."""
    p = Path(path)
    data, inode = read_bytes(p)
    try:
        whole: Any = parse_json(p, data)
    except BadResult:
        whole = None  # an event stream is one JSON text a line, not one
    if isinstance(whole, dict) and whole.get("format") == RESULT_FORMAT:
        return fill_in(document_events(result_of(p, whole, inode).doc))
    stream = read_stream(p, data)
    if warnings is not None:
        warnings.extend(stream.warnings)
    evs = timed(stream.events)
    # a stream recorded whole is played verbatim; one of the six types of before is filled in
    return evs if stream.versioned else fill_in(evs)


def moment(e: ev.Event) -> float | None:
    """The second of the run an event happened at, where it says so."""
    match e:
        case ev.Interval():
            return e.row.t
        case ev.StepEnded():
            start, secs = e.row.start_s, e.row.figures.get("seconds")
            return start + secs if isinstance(start, int | float) and isinstance(secs, int | float) else None
        case ev.Fired():
            return e.stop.at_s
        case ev.Finished() | ev.Totals():
            return e.elapsed_s
    t = getattr(e, "t", None)
    return t if isinstance(t, int | float) else None


def timed(evs: Iterable[ev.Event]) -> list[Timed]:
    """Each event at its own second, or at the one before it; never back in time."""
    out: list[Timed] = []
    now = 0.0
    for e in evs:
        t = moment(e)
        now = max(now, float(t)) if t is not None else now
        out.append((now, e))
    return out


# a result document, back into events ----------------------------------------------------------------
def document_events(doc: Json) -> list[Timed]:
    """The events a run's sinks got, as far as its result document keeps them (see the module)."""
    sc, intervals, step_rows = doc["scenario"], list(doc["intervals"]), {r["step"]: r for r in doc["steps"]}
    figures = catalog(Figures.from_json(doc.get("figures")))
    plan = PlannedRun.from_json(sc.get("plan"))
    steps = plan.plan.steps
    start = float(intervals[0]["start_s"]) if intervals else 0.0
    end = float(doc.get("elapsed_s") or 0.0)
    out: list[Timed] = [(0.0, ev.Begin((doc.get("tool") or {}).get("version") or "", doc.get("started_at") or "",
                                       ScenarioInfo.from_json(sc), ev.Machine.from_json(doc.get("machine")),
                                       StudyConfiguration.from_json(doc.get("configuration")),
                                       Figures.from_json(doc.get("figures"))))]
    server = ServerInfo.from_json(doc.get("server"))
    if server is not None:  # none when the target could not be reached: the screen never showed one either
        out.append((0.0, ev.Started(sc["name"], server.target, server.version, server.embedded, plan,
                                    _transactions(doc), list(sc.get("stop") or []), condition_specs(doc), server)))
    stop = StopReason.from_json(doc.get("stop"))
    fired = stop if stop is not None and stop.ends_climb else None
    warnings = list(doc.get("warnings") or [])
    said_at = _fired_warning(warnings, fired)
    out += [(0.0, ev.Log("warning", w)) for w in warnings[:said_at]]
    prepared = PrepareReport.from_json(doc.get("prepare"))
    if prepared is not None:
        out += [(0.0, ev.PhaseBegan("prepare", None, steps, 0, None)), (start, ev.Prepared(prepared))]
    if doc.get("workers") is not None:
        out.append((start, ev.Workers(int(doc["workers"]), str(doc.get("fleet") or ""))))
    cluster = ClusterInfo.from_json(doc.get("cluster"))
    if cluster is not None:  # its nodes, as the run's end said them
        out.append((start, ev.Cluster(cluster)))
    last_of_step = {row["step"]: i for i, row in enumerate(intervals) if row.get("measured")}
    messages = {int(e["code"]): e.get("message") or "" for e in doc.get("errors") or []}
    seen: set[int] = set()
    phase: tuple[str, int | None] | None = None
    step_rows_so_far: list[Json] = []
    def fire(t: float) -> None:
        nonlocal fired
        if fired is None:
            return
        at = fired.at_s if fired.at_s is not None else t
        out.extend([(at, ev.Fired(fired)), *((at, ev.Log("warning", w, at)) for w in warnings[said_at:])])
        fired = None

    for i, row in enumerate(intervals):
        t = float(row["t"])
        if fired is not None and fired.at_s is not None and t > fired.at_s:
            fire(t)
        if (row["phase"], row["step"]) != phase:
            if phase is None or row["step"] != phase[1]:
                step_rows_so_far = []
            phase = (row["phase"], row["step"])
            ph = _phase_event(plan, row, steps)
            out.append((ph.t or t, ph))
        so_far = None
        if row.get("measured"):
            step_rows_so_far.append(row)
            ended = i == last_of_step.get(row["step"]) and row["step"] in step_rows
            so_far = _so_far(step_rows[row["step"]], figures) if ended else _so_far_of(step_rows_so_far)
        out.append((t, ev.Interval(IntervalRow.from_json(row), so_far)))
        codes = {int(c) for tx in (row.get("transactions") or {}).values() for c in tx.get("errors_by_code") or {}}
        if codes - seen:
            out.append((t, ev.ErrorMessages({c: messages.get(c, "") for c in sorted(codes - seen)})))
            seen |= codes
        if i == last_of_step.get(row["step"]) and row["step"] in step_rows:
            out.append((t, ev.StepEnded(StepRow.from_json(step_rows.pop(row["step"])))))
    for row in step_rows.values():  # a step without an interval of its own (none is written so)
        out.append((float(row.get("start_s") or 0) + float(row.get("seconds") or 0),
                    ev.StepEnded(StepRow.from_json(row))))
    if fired is not None:
        fire(end)
    else:
        out.extend((end, ev.Log("warning", w)) for w in warnings[said_at:])
    out += _end_events(doc, end)
    return sorted(out, key=lambda te: te[0])  # stable: events of one second keep the run's order


def _end_events(doc: Json, end: float) -> list[Timed]:
    out: list[Timed] = []
    stop = StopReason.from_json(doc.get("stop"))
    if stop is not None and not stop.ends_climb and stop.kind != "interrupted" and stop.message:
        out.append((end, ev.Log("error", stop.message, end)))
    if doc.get("exit_code") == 3:
        out += [(end, ev.Log("error", f"expectation failed: {e['expect']} (measured {e['value']})", end))
                for e in doc.get("expect") or [] if not e.get("passed")]
    summary = doc.get("summary")
    if isinstance(power := doc.get("power"), dict):  # said as the run ended, before its totals
        out.append((end, ev.Power(power.get("source"), power.get("no_power_figure"))))
    out.append((end, ev.Totals(summary, doc.get("executor"), stop, end)))
    if doc.get("saturation") is not None:
        out.append((end, ev.Saturation(SaturationPoint.from_json(doc["saturation"]))))
    if doc.get("status") == "running":  # a checkpoint: the run was still going, or was killed
        out.append((end, ev.Log("warning", "the result ends here: it was written while the run was still going "
                                           "(the run may have been killed)", end)))
        return out
    lean = {k: v for k, v in summary.items() if k != "histograms"} if summary else None
    out.append((end, ev.Finished(doc["status"], int(doc["exit_code"]), _saturation(doc), stop,
                                 [ev.Expectation.from_json(e) for e in doc.get("expect") or [] if isinstance(e, dict)],
                                 lean, end, doc.get("finished_at") or "",
                                 doc.get("executor"), doc.get("workload_report"))))
    return out


def _transactions(doc: Json) -> list[str]:
    rows = doc["intervals"][:1] or [doc.get("summary") or {}]
    return list((doc["scenario"].get("workload") or {}).get("transactions") or rows[0].get("transactions") or {})


def _fired_warning(warnings: list[str], fired: StopReason | None) -> int:
    """Where the warning that said the stop is among the warnings (their number when there is none).
    A result keeps the line (stop.said); one written before it did is matched by the line's start."""
    if fired is None:
        return len(warnings)
    if fired.said is not None:
        return warnings.index(fired.said) if fired.said in warnings else len(warnings)
    mark = {"stop_condition": f"stop condition fired: {fired.condition}",
            "connections_refused": "the server refused connections",
            "users_not_connected": f"had no connection yet at the end of step {fired.step}",
            "client_limit": "the client machine could not start more users"}.get(fired.kind, "\0")
    for i, w in enumerate(warnings):
        if w.startswith(mark) or (fired.kind == "users_not_connected" and mark in w):
            return i
    return len(warnings)


def _phase_event(plan: PlannedRun, row: Json, steps: int) -> ev.PhaseBegan:
    kind, step = row["phase"], row["step"]
    p = next((p for p in plan.plan.phases if p.kind == kind and p.step == step), None)
    if p is None:  # not in the plan as stored: what the interval says
        users = int(row.get("users") or 0)
        return ev.PhaseBegan(kind, step, steps, users, None, users, row["start_s"])
    return ev.PhaseBegan(kind, step, steps, p.users, p.seconds, p.users_end, row["start_s"])


def catalog(doc_figures: Figures) -> Figures:
    """The figures a result declares; the core's for one written before results declared them."""
    return doc_figures or CORE_FIGURES


def _so_far(step: Json, figures: Figures) -> StepSoFar:
    """A step's figures as a live display shows the step so far (metrics.Aggregate.so_far's: the
    figures declared live for a step)."""
    return StepSoFar.of_row(step, (f.name for f in figures if "step" in f.live and f.place in ("tx", "figures")))


def _so_far_of(rows: Sequence[Json]) -> StepSoFar:
    """The step so far from its intervals: counts and rates add up, percentiles do not (not shown)."""
    secs = sum(float(r.get("seconds") or 0) for r in rows) or 1.0
    count = sum(int(r.get("count") or 0) for r in rows)
    counts: dict[str, tuple[int, int]] = {}
    for name, t in ((n, t) for r in rows for n, t in (r.get("transactions") or {}).items()):
        done, failed = counts.get(name, (0, 0))
        counts[name] = (done + int(t.get("count") or 0), failed + int(t.get("errors") or 0))
    qps = sum(float(r.get("qps") or 0) * float(r.get("seconds") or 0) for r in rows) / secs
    return StepSoFar(count=count, errors=sum(int(r.get("errors") or 0) for r in rows), seconds=round(secs, 3),
                     users=max(int(r.get("users") or 0) for r in rows),
                     declared={"tps": round(count / secs, 3), "qps": round(qps, 3)},
                     transactions={n: TxFigures(c, round(c / secs, 3), e) for n, (c, e) in counts.items()})


def condition_specs(doc: Json) -> tuple[ev.ConditionSpec, ...]:
    """The stop conditions as the live run described them, from the verdicts the result keeps (a step's
    conditions, the stop); a threshold's comparison is read from its text, as the language wrote it."""
    verdicts: dict[str, Json] = {}
    for row in doc["steps"]:
        for v in row.get("conditions") or []:
            verdicts.setdefault(v["condition"], v)
    stop = doc.get("stop") or {}
    if stop.get("reason") == "stop_condition":
        verdicts.setdefault(stop["condition"], stop)
    out = []
    for text in doc["scenario"].get("stop") or []:
        v = verdicts.get(text)
        if v is None:
            continue
        op = re.search(r">=|<=|==|!=|>|<", v.get("resolved") or text) if v["kind"] == "threshold" else None
        out.append(ev.ConditionSpec.from_json({
            "text": text, "resolved": v.get("resolved") or text, "kind": v["kind"], "metric": v["metric"],
            "op": op and op.group(0), "limit": float(v["limit"]), "unit": v.get("unit") or "",
            "window_s": v.get("window_s"), "held": v.get("held")}))
    return tuple(out)


# what a stream lacks, derived ------------------------------------------------------------------------
def fill_in(evs: list[Timed]) -> list[Timed]:
    """Ticks and the judge's word on the conditions, where the stream has none of them."""
    if not any(isinstance(e, ev.LiveTick) for _, e in evs):
        evs = _with_ticks(evs)
    if not any(isinstance(e, ev.Conditions) for _, e in evs):
        evs = _with_conditions(evs)
    if not any(isinstance(e, ev.Log) and e.level == "info" for _, e in evs):  # a result keeps no info lines
        evs = [te for t, e in evs for te in ([(t, e), (t, ev.Log("info", e.line(), e.t))]
                                              if isinstance(e, ev.PhaseBegan) and e.phase != "prepare" else [(t, e)])]
    return evs


def _with_ticks(evs: list[Timed]) -> list[Timed]:
    """One tick a second of each interval, with the interval's figures."""
    out: list[Timed] = []
    ph: ev.PhaseBegan | None = None
    stalls: list[tuple[float, float]] = []  # the step's so far, as its measured intervals recorded them
    step: int | None = None
    declared = CORE_FIGURES
    for t, e in evs:
        if isinstance(e, ev.Begin):
            declared = catalog(e.figures)
        if isinstance(e, ev.PhaseBegan):
            ph = e
        if isinstance(e, ev.Interval):
            row = e.row.to_json()
            if e.row.step != step:
                stalls, step = [], e.row.step
            if e.row.measured:
                stalls += [(float(a), float(b)) for a, b in row.get("stalls") or ()]
            out += _ticks(row, ph, declared, _longest(stalls) if e.row.measured else None)
        out.append((t, e))
    return out


def _longest(spans: list[tuple[float, float]]) -> float | None:
    """The longest of a step's stalls, its intervals' pieces joined where they touch (as the live
    tick's step so far joins its ticks'); None: none."""
    longest, cur = None, None
    for a, b in sorted(spans):
        cur = (cur[0], max(cur[1], b)) if cur is not None and a <= cur[1] + 1e-3 else (a, b)
        longest = max(longest or 0.0, cur[1] - cur[0])
    return longest


def _ticks(row: Json, ph: ev.PhaseBegan | None, declared: Figures, stall_s: float | None = None) -> list[Timed]:
    secs, end = float(row.get("seconds") or 0), float(row["t"])
    n = max(1, round(secs))
    per_s = 1 / (secs or 1)
    figures: Json = {**{f.name: row.get(f.name) for f in declared.at("tx") if "tick" in f.live},
                     "errors_per_s": round(float(row.get("errors") or 0) * per_s, 2),
                     "retries_per_s": round(float(row.get("retries") or 0) * per_s, 2), "cpu": row.get("cpu") or {},
                     "transactions": {name: {"count": round(int(tx.get("count") or 0) / n), "tps": tx.get("tps"),
                                             "errors": round(int(tx.get("errors") or 0) / n)}
                                      for name, tx in (row.get("transactions") or {}).items()}}
    # what a tick carries beside: a workload's rates of one transaction (TPC-C's new orders a minute), an open-loop
    # rate's headline (asked against done, arrivals dropped, the pool's busy users)
    figures.update({f.name: row[f.name] for f in declared.at("figures") if "tick" in f.live and f.name in row})
    figures.update(side_figures(row, CLIENT_LAG_MS))
    if stall_s is not None:  # the live tick's: the step's longest stall so far
        figures["stall_s"] = round(stall_s, 1)
    typed = TickFigures.from_json(figures)  # what the live tick carried, as a stream's line reads back
    out: list[Timed] = []
    for k in range(1, n + 1):
        t = round(end - secs + k * secs / n, 3)
        known = ph is not None and ph.seconds is not None and ph.t is not None
        left = round(max(ph.seconds - (t - ph.t), 0.0), 1) if known else None  # type: ignore[operator,union-attr]
        out.append((t, ev.LiveTick(t, row["phase"], row["step"], int(row.get("users") or 0), False, left, typed)))
    return out


def _with_conditions(evs: list[Timed]) -> list[Timed]:
    """The judge's states after each step's verdicts and when a condition fired."""
    specs: dict[str, ev.ConditionSpec] = {}
    texts: list[str] = []
    states: dict[str, ev.ConditionState] = {}
    out: list[Timed] = []
    for t, e in evs:
        out.append((t, e))
        if isinstance(e, ev.Started):
            specs, texts = {c.text: c for c in e.condition_specs}, list(e.conditions)
            continue
        if isinstance(e, ev.StepEnded) and e.row.conditions:
            for v in e.row.conditions:
                text, value, before = v["condition"], v.get("value"), v.get("previous")
                if text not in states or states[text].state != "fired":  # a fired condition stays fired
                    state = "fired" if v.get("fired") else _judged(specs.get(text), value, before)
                    # a sustained one: the worst its window reached in the step
                    source = f"step {e.row.step}" + (f", worst {v['window_s']:g}s" if v.get("window_s") else "")
                    states[text] = ev.ConditionState(text, value, before, state, source)
        elif isinstance(e, ev.Fired) and (text := e.stop.condition) is not None and text in specs:
            window = e.stop.window_s
            source = states[text].source if text in states else (
                f"last {window:g}s" if window else f"step {e.stop.step}")
            states[text] = ev.ConditionState(text, e.stop.value, e.stop.previous, "fired", source)
        else:
            continue
        shown = tuple(states.get(x, ev.ConditionState(x, None, None, "-", "")) for x in texts)
        out.append((t, ev.Conditions(t, shown)))
    return out


def _judged(c: ev.ConditionSpec | None, value: float | None, previous: float | None) -> str:
    """ok or near for a verdict that did not fire, in the judge's own words (judge.state_of; values and
    limit are in one unit, which is all its comparisons need)."""
    cmp = next((k for k in CORE_COMPARISONS if k.name == c.kind), None) if c is not None else None
    if c is None or (c.compared_by is not None and cmp is None):  # a plugin's comparison, without the plugin
        return "ok"
    cond = m.Condition(c.kind, m.Metric("latency" if c.latency else c.metric), c.op, c.limit, c.unit,
                       c.window_s, c.text, comparison=cmp)
    state = state_of(cond, value, previous)
    return "ok" if state == "over" else state  # judged and not fired: within its limit after all


def side_figures(row: dict[str, Any], lag_bound_ms: float) -> dict[str, Any]:
    """What a live tick carried beside its declared figures, rebuilt from an interval row (bench
    replay): a stall, replica lag, the busiest disk, and the worst process's scheduling lag with the
    judge's bound (the interval's figures, not the second's)."""
    out: dict[str, Any] = {}
    if (row.get("stall_s") or 0) >= STALL_SHOWN_S:  # the interval's (the live tick showed the step's so far)
        out["stall_s"] = row["stall_s"]
    if (rep := row.get("replication")) and rep.get("lag_s") is not None:
        out["lag_s"] = rep["lag_s"]
    if (disk := row.get("disk")) and disk.get("busiest"):
        out["disk"] = {"device": disk["busiest"], "util_pct": disk["util_pct"]}
    if worst := worst_lag(row.get("client_lag_ms_by_process")):
        out["client_lag"] = {"p90_ms": worst[0], "bound_ms": lag_bound_ms}
    return out


def _saturation(doc: dict[str, Any]) -> SaturationPoint | None:
    sat = doc.get("saturation")
    return SaturationPoint.from_json(sat) if isinstance(sat, dict) else None
