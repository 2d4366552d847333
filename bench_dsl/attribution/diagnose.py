"""The verdict of one step: every rule judges the same window, and the class with the largest share
of the sessions' time that a signal corroborates is named, with a confidence, its evidence, what
was ruled out and what had no signal. Pure: plain data in, a Diagnosis out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from bench_dsl.attribution.model import Confidence, Diagnosis, Finding, NoSignal, Profile, RuledOut
from bench_dsl.attribution.profile import profile_of
from bench_dsl.attribution.registry import RULES
from bench_dsl.attribution.window import Context, Step, Window, baseline, pct

# ATTRIBUTION.md, "a frame": confidence high when the share is >= 0.5, two or more signals
# corroborate and the next class's share is under half of it; medium when the share is >= 0.3
HIGH_SHARE = 0.5
HIGH_CORROBORATIONS = 2
NEXT_UNDER = 0.5
MEDIUM_SHARE = 0.3
# the one-line sentence names this many classes ruled out, the most suspected first (the console's
# line stays a line; the JSON lists them all)
WORDS_RULED_OUT = 3
SUSPECTED = ("server_cpu", "disk", "buffer_pool", "row_locks", "client", "machine_cpu", "commit_flush",
             "redo_log", "connections", "table_locks", "user_locks", "network")
UNEXPLAINED = "unexplained"
PERFORMANCE_SCHEMA = "performance_schema's wait classes"


def attribute(step: Mapping[str, Any], earlier: Sequence[Mapping[str, Any]] = (),
              context: Context | None = None) -> Diagnosis:
    """What ran out in `step` (a step row of a result), judged against a baseline among `earlier`
    (the steps before it, in order)."""
    ctx = context or Context()
    s = Step(step)
    b_row = baseline(step, earlier)
    b = None if b_row is None else Step(b_row)
    p = profile_of(s, ctx)
    w = Window(s, b, p, None if b is None else profile_of(b, ctx), ctx)
    outcomes = [(r, r.judge(w)) for r in RULES]
    found = {o.cls for _, o in outcomes if isinstance(o, Finding) and o.corroborations}
    findings: list[Finding] = []
    silent = [o for _, o in outcomes if isinstance(o, NoSignal)]
    for r, o in outcomes:
        if isinstance(o, Finding):
            if o.corroborations:
                findings.append(replace(o, symptom_of=next((c for c in r.symptom_of if c in found), None)))
            else:  # a rule that found nothing to corroborate has no signal, whatever it built
                silent.append(NoSignal(o.cls, "no signal: none of its signals passed its limit"))
    order = {r.cls: i for i, r in enumerate(RULES)}
    ranked = tuple(sorted(findings, key=lambda f: (not f.hard, f.symptom_of is not None,
                                                   -(f.share if f.share is not None else -1.0),
                                                   -f.corroborations, order[f.cls])))
    ruled = tuple(sorted((o for _, o in outcomes if isinstance(o, RuledOut)),
                         key=lambda r: SUSPECTED.index(r.cls) if r.cls in SUSPECTED else len(SUSPECTED)))
    base = None if b is None else b.number
    if not ranked:
        tell = (PERFORMANCE_SCHEMA + " (off by default on MariaDB: turning it on takes a restart)"
                + ("" if not silent else "; or the signals these classes lack: " + ", ".join(n.cls for n in silent)))
        return Diagnosis(UNEXPLAINED, "low", p.other_share, (), ruled, _unexplained_words(p, ruled), p, (),
                       tuple(silent), base, tell)
    top = ranked[0]
    causes = [f for f in ranked if f.symptom_of is None]
    nxt = causes[1] if len(causes) > 1 else None
    confidence, notes = _confidence(top, nxt, p)
    return Diagnosis(top.cls, confidence, top.share, top.evidence, ruled, _words(top, nxt, confidence, p, ruled), p,
                   ranked, tuple(silent), base, None, tuple(notes))


def _confidence(top: Finding, nxt: Finding | None, p: Profile) -> tuple[Confidence, list[str]]:
    notes: list[str] = []
    share, n = top.share, top.corroborations
    level: Confidence
    if top.hard:
        level = "high" if n >= HIGH_CORROBORATIONS else "medium"
    elif share is None:
        notes.append("its share of the sessions' time is not known (Threads_running's mean is not recorded)")
        level = "low"
    elif share >= HIGH_SHARE and n >= HIGH_CORROBORATIONS and (
            nxt is None or (nxt.share is not None and nxt.share < NEXT_UNDER * share)):
        level = "high"
    else:
        if share >= HIGH_SHARE and n < HIGH_CORROBORATIONS:
            notes.append(f"one signal only: {HIGH_CORROBORATIONS} make it high")
        if share >= HIGH_SHARE and nxt is not None:
            notes.append(f"{nxt.cls} comes close ({pct(nxt.share)} of the sessions' time)")
        level = "medium" if share >= MEDIUM_SHARE else "low"
    if level == "high" and not p.measured and not top.hard:
        # one reading of Threads_running may be anywhere between idle and every session
        notes.append("the sessions in the server are from one reading of Threads_running, not its mean"
                     if p.active_from == "one reading" else "the sessions in the server are not known: "
                     "Threads_running is not recorded")
        level = "medium"
    return level, notes


def _not(ruled: tuple[RuledOut, ...]) -> str:
    if not ruled:
        return ""
    named = ", ".join(f"not {r.short}" for r in ruled[:WORDS_RULED_OUT])
    more = len(ruled) - WORDS_RULED_OUT
    return f"; {named}" + (f", and {more} more ruled out" if more > 0 else "")


def _words(top: Finding, nxt: Finding | None, confidence: Confidence, p: Profile,
           ruled: tuple[RuledOut, ...]) -> str:
    if confidence == "high":
        head = f"limited by {top.words}"
    elif confidence == "medium":
        head = f"likely limited by {top.words}"
    else:
        head = f"perhaps limited by {top.words}" + ("" if nxt is None else f" or {nxt.words}")
        off = p.of_active(p.other_share)
        if off is not None:
            head += f", {pct(off)} of running sessions off CPU and off row locks"
    return head + _not(ruled)


def _unexplained_words(p: Profile, ruled: tuple[RuledOut, ...]) -> str:
    parts = [f"{pct(v)} {what}" for v, what in ((p.outside_share, "outside the server"), (p.cpu_share, "on CPU"),
                                                 (p.row_lock_share, "on row locks"), (p.other_share, "in other waits"))
             if v is not None]
    time = f" (the sessions' time: {', '.join(parts)})" if parts else ""
    return f"unexplained: no resource passed its limit{time}; {PERFORMANCE_SCHEMA} would tell" + _not(ruled)
