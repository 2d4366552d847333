"""Stalls: spans of a run in which users were inside transactions and none of them finished one.

A closed loop hides them from its percentiles: while the server answers nothing, its users wait
in the transactions they had sent, so a 10 s freeze among 700,000 fast transactions is 4 slow ones.
What shows them is time between completions. Each process that runs users keeps the gaps between
its completions (the C executor's Counts, at no cost per transaction beyond a comparison), and
the time of its latest; the coordinator intersects the processes' gaps over each tick (the whole
fleet was quiet only where every process was) and the aggregates join the ticks' pieces.

A gap is a stall only where some user waited on the server. An open loop's users wait for their
arrivals between transactions (at 0.5 tps, two seconds of every two), TPC-C's for their keying and
think times: that silence is the load's, not the server's. So each process also keeps the spans in
which none of its users was inside a transaction (Counts' idle spans: a user enters at its first
transaction and leaves when it sleeps for an arrival, pauses, or stops; retrying or reconnecting, it
still waits on the server), and the coordinator takes out of the fleet's quiet the spans in which no
process had a user inside.

Times here are CLOCK_MONOTONIC seconds (time.monotonic, shared by the processes of one machine)
until the scheduler moves a tick's stalls to the run's elapsed seconds."""

from __future__ import annotations

from dataclasses import dataclass

TimeSpan = tuple[float, float]

# The shortest gap a process records (the C executor's QUIET_MIN_NS): the resolution of a stall
RESOLUTION_S = 0.05
# A stall in a step's total (`stall_total_s`, `stalls`): a second or more without a completion
STALL_MIN_S = 1.0
# A gap ends at a completion, where the next gap begins: each is cut this much short of its end, so
# that two gaps either side of a completion never touch, and are never joined into one stall as the
# pieces of one gap cut by a tick's boundary (which do touch) are
BREAK_S = 0.001


@dataclass(frozen=True, slots=True)
class Quiet:
    """One process's gaps between completions, taken with its counts: `spans` of at least
    RESOLUTION_S, `last` its latest completion (None: none yet), `at` when they were taken; `idle`
    the spans of at least RESOLUTION_S in which none of its users was inside a transaction, and
    `idle_from` since when none was at the take (None: one was; 0: since ever). A process that says
    nothing of its users' idleness had one inside all along."""

    spans: tuple[TimeSpan, ...]
    last: float | None
    at: float
    idle: tuple[TimeSpan, ...] = ()
    idle_from: float | None = None

    @classmethod
    def from_counts(cls, raw: tuple[list[tuple[int, int]], int | None, int,
                                    list[tuple[int, int]], int | None]) -> Quiet:
        """From Counts.quiet() (nanoseconds)."""
        spans, last, at, idle, idle_from = raw
        return cls(tuple((a / 1e9, b / 1e9) for a, b in spans), None if last is None else last / 1e9, at / 1e9,
                   tuple((a / 1e9, b / 1e9) for a, b in idle), None if idle_from is None else idle_from / 1e9)

    def to_wire(self) -> list[object]:
        return [[list(s) for s in self.spans], self.last, self.at, [list(s) for s in self.idle], self.idle_from]

    @classmethod
    def from_wire(cls, w: list[object]) -> Quiet:
        spans, last, at, *rest = w
        idle, idle_from = rest if rest else ([], None)
        assert isinstance(spans, list) and isinstance(at, (int, float)) and isinstance(idle, list)
        assert last is None or isinstance(last, (int, float))
        assert idle_from is None or isinstance(idle_from, (int, float))
        return cls(tuple((float(a), float(b)) for a, b in spans), None if last is None else float(last), float(at),
                   tuple((float(a), float(b)) for a, b in idle), None if idle_from is None else float(idle_from))


def merged(spans: list[TimeSpan], gap: float = 1e-6) -> list[TimeSpan]:
    """Spans joined where they touch or overlap, in order."""
    out: list[TimeSpan] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def join(pieces: list[TimeSpan], new: list[TimeSpan]) -> list[TimeSpan]:
    """Adds a tick's pieces to an aggregate's, joining those that touch as they come, and dropping
    one too short to count once the next cannot join it: a run of hours keeps its stalls, not a
    piece a second. (Windows add their ticks newest first: those pieces are only appended.)"""
    for a, b in new:
        if pieces and pieces[-1][0] <= a:
            last = pieces[-1]
            if a <= last[1] + 1e-6:
                pieces[-1] = (last[0], max(last[1], b))
                continue
            if last[1] - last[0] < RESOLUTION_S:
                pieces.pop()
        pieces.append((a, b))
    return pieces


def _intersect(xs: list[TimeSpan], ys: list[TimeSpan]) -> list[TimeSpan]:
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if a < b:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def _subtract(xs: list[TimeSpan], ys: list[TimeSpan]) -> list[TimeSpan]:
    """xs without ys (both joined, in order)."""
    out, j = [], 0
    for a, b in xs:
        while j < len(ys) and ys[j][1] <= a:
            j += 1
        k = j
        while k < len(ys) and ys[k][0] < b:
            if ys[k][0] > a:
                out.append((a, ys[k][0]))
            a = max(a, ys[k][1])
            k += 1
        if a < b:
            out.append((a, b))
    return out


def quiet_spans(quiet: list[Quiet], start: float, end: float) -> list[TimeSpan]:
    """The spans of [start, end] in which no process finished a transaction while some user was
    inside one. A process still quiet when it was asked is quiet up to `end` (the earliest
    process's take: the next tick goes on from there), and still idle, idle up to it. No process
    heard from: nothing is known, nothing is said."""
    if not quiet or end <= start:
        return []
    common = [(start, end)]
    for q in quiet:
        mine = [(max(a, start), min(b - BREAK_S, end)) for a, b in q.spans]
        mine.append((start if q.last is None else max(q.last, start), end))
        common = _intersect(common, merged([s for s in mine if s[0] < s[1]]))
        if not common:
            return []
    idle = [(start, end)]
    for q in quiet:
        mine = [(max(a, start), min(b, end)) for a, b in q.idle]
        if q.idle_from is not None:
            mine.append((max(q.idle_from, start), end))
        idle = _intersect(idle, merged([s for s in mine if s[0] < s[1]]))
        if not idle:
            break
    return _subtract(common, idle)


@dataclass(frozen=True, slots=True)
class Stalls:
    """The stalls of an aggregate (an interval, a step, a window, the run)."""

    spans: tuple[TimeSpan, ...]  # joined, at least RESOLUTION_S each

    @classmethod
    def of(cls, pieces: list[TimeSpan]) -> Stalls:
        return cls(tuple(s for s in merged(pieces) if s[1] - s[0] >= RESOLUTION_S))

    @property
    def longest(self) -> TimeSpan | None:
        return max(self.spans, key=lambda s: s[1] - s[0], default=None)

    @property
    def longest_s(self) -> float:
        s = self.longest
        return 0.0 if s is None else s[1] - s[0]

    @property
    def stalls(self) -> tuple[TimeSpan, ...]:
        """Those counted as stalls: STALL_MIN_S or longer."""
        return tuple(s for s in self.spans if s[1] - s[0] >= STALL_MIN_S)

    @property
    def total_s(self) -> float:
        return sum((b - a for a, b in self.stalls), 0.0)

    def to_json(self) -> dict[str, object]:
        return {"stall_s": round(self.longest_s, 3), "stall_total_s": round(self.total_s, 3),
                "stalls": [[round(a, 3), round(b, 3)] for a, b in self.stalls]}


# an interval's longest stall (bench_dsl.measure.stalls) the console line and a replayed tick show: half a
# second or more without a completion is worth a look, even as a piece of a longer one
STALL_SHOWN_S = 0.5
