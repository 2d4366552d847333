"""What a verdict is made of, as data: the console, the live screen, the result, compare and the
report all read the same fields (ADDM's findings: impact, evidence, kind). Numbers are rounded
where they are made, so that a verdict written to JSON and read back is the same verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, cast

Confidence = Literal["high", "medium", "low"]
# how a signal is held to its limit: a reader of the JSON needs it to tell "at least" from "under"
Op = Literal[">=", "<"]


def r3(x: float | None) -> float | None:
    """Three decimals: enough for a share or a rate, and what the JSON carries exactly."""
    return None if x is None else round(float(x), 3)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One signal a rule read in the saturated step: its value, the limit it was held to, and the
    baseline step's value where the rule compares with it."""

    figure: str  # where it comes from: a server_status variable, a step figure, or a derived one
    value: float | None
    unit: str
    limit: float | None = None
    op: Op = ">="
    baseline: float | None = None
    corroborates: bool = False  # past its limit: counts towards the finding's confidence
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"figure": self.figure, "value": self.value, "unit": self.unit, "limit": self.limit, "op": self.op,
                "baseline": self.baseline, "corroborates": self.corroborates, "note": self.note}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Evidence:
        return cls(d["figure"], d["value"], d["unit"], d.get("limit"), cast(Op, d.get("op", ">=")),
                   d.get("baseline"), bool(d.get("corroborates", False)), d.get("note", ""))


@dataclass(frozen=True, slots=True)
class Finding:
    """A class a signal supports: its share of the sessions' time and the signals that say so."""

    cls: str
    share: float | None  # of the sessions' time in flight (N); None: the profile could not tell
    evidence: tuple[Evidence, ...]
    words: str  # "row locks on acct (41% of running sessions waiting)"
    # a limit reached outright (a refused connection) wins whatever the shares: the climb cannot
    # add a session the server refuses
    hard: bool = False
    symptom_of: str | None = None  # set by the verdict: disk busy because the buffer pool misses

    @property
    def corroborations(self) -> int:
        return sum(e.corroborates for e in self.evidence)

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls, "share": self.share, "corroborations": self.corroborations,
                "words": self.words, "hard": self.hard, "symptom_of": self.symptom_of,
                "evidence": [e.to_json() for e in self.evidence]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Finding:
        return cls(d["class"], d.get("share"), tuple(Evidence.from_json(e) for e in d.get("evidence", ())),
                   d.get("words", ""), bool(d.get("hard", False)), d.get("symptom_of"))


@dataclass(frozen=True, slots=True)
class RuledOut:
    """A class whose signals were read and stayed under their limits."""

    cls: str
    figure: str
    value: float | None
    unit: str
    why: str  # "not server CPU: the server used 35% of the 2 cores it may use"
    short: str  # "server CPU (35% of its 2 cores)": what the one-line sentence says after "not"
    limit: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls, "why": self.why, "figure": self.figure, "value": self.value,
                "unit": self.unit, "limit": self.limit, "short": self.short}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RuledOut:
        return cls(d["class"], d["figure"], d.get("value"), d.get("unit", ""), d.get("why", ""),
                   d.get("short", ""), d.get("limit"))


@dataclass(frozen=True, slots=True)
class NoSignal:
    """A class the result holds no signal for: neither found nor ruled out, and what would tell."""

    cls: str
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls, "why": self.why}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> NoSignal:
        return cls(d["class"], d.get("why", ""))


Outcome = Finding | RuledOut | NoSignal


@dataclass(frozen=True, slots=True)
class Profile:
    """Where the sessions' time went in one step, by Little's law. Every share is of N, the
    sessions in flight at the client, so that time outside the server and each kind of time inside
    it are one currency: outside + cpu + row_lock + other = 1 when A is known."""

    sessions_in_flight: float | None  # N
    active_in_server: float | None  # A: mean Threads_running - 1 (the sampler's own), at least cpu + rowlock
    active_from: str | None  # "mean", "readings", "one reading" (a point sample: weak) or None
    cpu_s_per_s: float | None  # the server's CPU seconds per second
    row_lock_s_per_s: float | None  # sessions waiting on a row lock (PMM's row lock wait load)
    outside_share: float | None
    cpu_share: float | None
    row_lock_share: float | None
    other_share: float | None  # in the server, neither on CPU nor on a row lock: I/O, other waits
    threads_running: float | None = None  # as read (mean, or one reading); A is this - 1, or the floor

    @property
    def measured(self) -> bool:
        """A is Threads_running's mean over the step, not one reading of it (nor a floor)."""
        return self.active_from in ("mean", "readings")

    def of_active(self, share: float | None) -> float | None:
        """A share of N as a share of the sessions in the server (A): "41% of running sessions"."""
        if share is None or self.outside_share is None or self.outside_share >= 1.0:
            return None
        return r3(min(1.0, share / (1.0 - self.outside_share)))

    def to_json(self) -> dict[str, Any]:
        return {"sessions_in_flight": self.sessions_in_flight, "active_in_server": self.active_in_server,
                "active_from": self.active_from, "cpu_s_per_s": self.cpu_s_per_s,
                "row_lock_s_per_s": self.row_lock_s_per_s, "outside_share": self.outside_share,
                "cpu_share": self.cpu_share, "row_lock_share": self.row_lock_share,
                "other_share": self.other_share, "threads_running": self.threads_running}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Profile:
        return cls(d.get("sessions_in_flight"), d.get("active_in_server"), d.get("active_from"),
                   d.get("cpu_s_per_s"), d.get("row_lock_s_per_s"), d.get("outside_share"), d.get("cpu_share"),
                   d.get("row_lock_share"), d.get("other_share"), d.get("threads_running"))


EMPTY_PROFILE = Profile(None, None, None, None, None, None, None, None, None)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """What ran out in one step: the class, how sure, the evidence, what was ruled out, what had no
    signal, every class a signal supported (ranked), the time profile, and one sentence."""

    cls: str  # a rule's class, or "unexplained"
    confidence: Confidence
    share: float | None  # the class's; unexplained: the time in other waits, which no class took
    evidence: tuple[Evidence, ...]
    ruled_out: tuple[RuledOut, ...]
    words: str
    profile: Profile = EMPTY_PROFILE
    findings: tuple[Finding, ...] = ()
    no_signal: tuple[NoSignal, ...] = ()
    baseline_step: int | None = None
    would_tell: str | None = None  # unexplained only: what would name the class
    notes: tuple[str, ...] = field(default=())  # why the confidence was held down, if it was

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls, "confidence": self.confidence, "share": self.share, "words": self.words,
                "evidence": [e.to_json() for e in self.evidence],
                "ruled_out": [r.to_json() for r in self.ruled_out],
                "no_signal": [n.to_json() for n in self.no_signal],
                "findings": [f.to_json() for f in self.findings],
                "profile": self.profile.to_json(), "baseline_step": self.baseline_step,
                "would_tell": self.would_tell, "notes": list(self.notes)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Diagnosis:
        return cls(d["class"], cast(Confidence, d["confidence"]), d.get("share"),
                   tuple(Evidence.from_json(e) for e in d.get("evidence", ())),
                   tuple(RuledOut.from_json(r) for r in d.get("ruled_out", ())), d.get("words", ""),
                   Profile.from_json(d.get("profile") or {}),
                   tuple(Finding.from_json(f) for f in d.get("findings", ())),
                   tuple(NoSignal.from_json(n) for n in d.get("no_signal", ())),
                   d.get("baseline_step"), d.get("would_tell"), tuple(d.get("notes", ())))
