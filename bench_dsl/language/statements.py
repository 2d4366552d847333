"""What a workload's transactions are when they are nothing but prepared statements whose results
are never read: the statements, the values each execution is given and what they are drawn from,
and whether BEGIN ... COMMIT surrounds them. Workloads describe their transactions with these
(Session.statements); the C executor (bench_dsl/native/executor.py, src/) prepares the statements
and runs the transactions on a thread per user, drawing every value itself. Neither side imports
the other: this module is all they share.

The description is the same for every user of a workload (build it once): each user draws from a
generator of its own, seeded from the run's seed and its number."""

from __future__ import annotations

from dataclasses import dataclass

Constant = int | float | str | None


@dataclass(frozen=True, slots=True)
class Draw:
    """A value drawn anew each time: `kind` and its arguments, as the executor reads them.

    uniform(lo, hi) integers; uniform_real(lo, hi); special(lo, hi, pct, res, iters), gaussian(lo,
    hi, iters) and pareto(lo, hi, h): sysbench 1.0's distributions, as its sb_rand.c computes them;
    zipf(lo, hi, exponent); nurand(A, x, y, C) (TPC-C 2.1.6); sequence(start), shared by the users
    of a process; choice(v, ...); randstr(min_len, max_len) of letters and digits; digits(groups):
    sysbench's c and pad strings (groups of 11 random digits joined by dashes); const(v)."""

    kind: str
    args: tuple[Constant, ...] = ()


@dataclass(frozen=True, slots=True)
class Execute:
    """One statement executed: its SQL (? placeholders) per table of its step, and its values:
    (index of a draw of its step, an integer added to it)."""

    sql: tuple[str, ...]
    params: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class StatementStep:
    """Statements run `count` times. With `tables` > 1, a table is drawn uniformly for the step (as
    sysbench draws one per group of statements) and each Execute names one SQL per table. The draws
    are drawn anew, in order, before each repetition."""

    count: int
    tables: int
    draws: tuple[Draw, ...]
    executes: tuple[Execute, ...]


@dataclass(frozen=True, slots=True)
class Transaction:
    steps: tuple[StatementStep, ...]
    explicit: bool  # BEGIN before the statements, COMMIT after


@dataclass(frozen=True, slots=True)
class Transactions:
    """Every transaction type of a workload, numbered as its `names`."""

    transactions: tuple[Transaction, ...]
