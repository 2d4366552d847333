"""The method: every figure beside a reference taken in the same run, alternated A B A B ... A, and
the median of the ratios of each B to the references on either side of it (this kind of machine
drifts by up to 2x within the hour, so an absolute figure alone means little). Also: what limits a
point (client, server, machine)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def median(values: Sequence[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return statistics.median(vs) if vs else None


def paired_ratios(a: Sequence[float | None], b: Sequence[float | None]) -> list[float]:
    """b_i / a_i for each pair where both were measured (a is the reference)."""
    return [y / x for x, y in zip(a, b, strict=True) if x is not None and y is not None and x > 0]


def bracketed_ratios(a: Sequence[float | None], b: Sequence[float | None]) -> list[float]:
    """b_i against the geometric mean of the references on either side of it, a_i and a_(i+1), for
    a sequence run as a_0 b_0 a_1 b_1 ... a_n: a drift of the machine's speed during a pair then
    cancels to first order instead of landing on b's side or a's. Where one neighbour is missing
    (failed, or the run stopped before the closing reference), the other stands alone."""
    if len(a) not in (len(b), len(b) + 1):
        raise ValueError(f"{len(a)} references cannot bracket {len(b)} runs")
    out = []
    for i, y in enumerate(b):
        around = [x for x in a[i:i + 2] if x is not None and x > 0]
        if y is not None and around:
            out.append(y / math.prod(around) ** (1 / len(around)))
    return out


def ratio_summary(a: Sequence[float | None], b: Sequence[float | None],
                  bracketed: bool = False) -> dict[str, float | int | None]:
    """Median, min and max of the ratios b / a: paired (b_i / a_i), or with `bracketed`, each b
    against the references run before and after it (`bracketed_ratios`)."""
    rs = bracketed_ratios(a, b) if bracketed else paired_ratios(a, b)
    return {"median": round(statistics.median(rs), 4) if rs else None,
            "min": round(min(rs), 4) if rs else None, "max": round(max(rs), 4) if rs else None,
            "pairs": len(rs), "at_least_1": sum(r >= 1.0 for r in rs)}


# A process counts as saturated near a full core (or all of its share of the cores); the 15% margin
# leaves room for the time a process waits on the kernel or the scheduler at full load.
SATURATED = 0.85


def limit_note(client: str, client_cores: float | None, busiest_cores: float | None, process_cap: float,
               server_cores: float | None, host_cores: float | None, ncpu: int, other_cores: float | None) -> str:
    """What limits a point, from the medians of its runs.

    - client: one of its processes uses nearly all it can (a Python process: one core; sysbench:
      one core per thread, up to the machine's cores);
    - server: the server process uses nearly all the machine's cores;
    - machine: client + server (+ others' load on a shared machine) fill the cores, neither alone;
    - round trips: no CPU is saturated, the time goes in waiting for replies (1 user, typically)."""
    if client_cores is None or host_cores is None:
        return "not measured"
    s = server_cores or 0.0
    parts = f"client {client_cores:.2f}, server {s:.2f}" + (
        f", others {other_cores:.2f}" if other_cores and other_cores >= 0.05 else "") + f" of {ncpu} cores"
    if busiest_cores is not None and busiest_cores >= SATURATED * process_cap:
        what = "one Python process" if client == "bench-dsl" else f"{client}"
        return f"client: {what} at {busiest_cores:.0%} of a core ({parts})" if process_cap == 1 else \
            f"client: {what} at {busiest_cores:.2f} of its {process_cap:g} cores ({parts})"
    if server_cores is not None and server_cores >= SATURATED * ncpu:
        return f"server: {parts}"
    if host_cores >= 0.9 * ncpu:
        return f"machine: all cores busy ({parts})"
    return f"round trips: no CPU saturated ({parts})"
