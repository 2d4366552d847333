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
    sysbench's c and pad strings (groups of 11 random digits joined by dashes); const(v).

    Drawn by each user, from more than its generator: user(k), the k-th of the user's own values
    (Session.values: a TPC-C terminal's home warehouse); and TPC-C's inputs, which read values of
    their step drawn before them (by their index among the step's values, as Execute names them):
    tpcc_order(home, warehouses, A, C, items, rollback, remote) gives an order's lines as JSON
    [[item, supplying warehouse, quantity], ...] sorted by stock key, their count, whether all are
    supplied by the home warehouse, and whether a stock row comes twice; tpcc_remote(home,
    district, warehouses, districts, remote) a payment's customer warehouse and district;
    tpcc_customer(by_name, A_last, C_last, A_id, C_id, customers, *syllables) a customer's id and
    last name (0 and the name, or the id and None). captured(): no draw, a value an execution reads
    back (Capture)."""

    kind: str
    args: tuple[Constant, ...] = ()

    @property
    def width(self) -> int:
        """How many values it gives (the step's values that follow it are its)."""
        return WIDTHS.get(self.kind, 1)


# draws of several values, and the arguments of a draw that name a value of its step drawn before it
WIDTHS = {"tpcc_order": 4, "tpcc_remote": 2, "tpcc_customer": 2}
READS = {"tpcc_order": (0,), "tpcc_remote": (0, 1)}


@dataclass(frozen=True, slots=True)
class Capture:
    """What an execution reads back into a value of its step (by its index, as `params` name them):
    `insert_id`, the OK packet's; `rows`, its result's row count; `first` or `middle`, column
    `column` of its first or middle row (TPC-C's customer by last name, 2.5.2.2) as an integer, None
    when there is none; `first_text`, the first row's as text (up to 39 bytes); `rows_json`, every
    row as a JSON array of arrays (of numbers: up to 32 columns of up to 39 bytes), None when there
    are none."""

    value: int
    kind: str
    column: int = 0


@dataclass(frozen=True, slots=True)
class Execute:
    """One statement executed: its SQL (? placeholders) per table of its step, and its values:
    (index of a value of its step, an integer added to it); its step's values are its draws', in
    order, a draw of several values giving several. `outcome`: the first column of its first row
    says whether the transaction kept its work, 0 when it rolled back on purpose (a stored
    procedure's answer), which counts it among the rollbacks."""

    sql: tuple[str, ...]
    params: tuple[tuple[int, int], ...]
    outcome: bool = False
    captures: tuple[Capture, ...] = ()
    when: int | None = None  # sent only when this value of its step is not None


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
    explicit: bool  # BEGIN before the statements (unless autocommit is off), COMMIT after
    # (a, b, plus), values of its last step: it commits when a >= b + plus, and rolls back on purpose
    # otherwise (counted among the rollbacks); None: it always commits
    keep: tuple[int, int, int] | None = None


@dataclass(frozen=True, slots=True)
class Pause:
    """A paced user's waits around a transaction of this type, out of its response time: before
    it, the think time owed for the transaction before it, then `keying_s`; after it, a think time
    owed, negative exponential with mean `think_mean_s` and cut at `think_max_s` (TPC-C clause
    5.2.5)."""

    keying_s: float
    think_mean_s: float
    think_max_s: float


@dataclass(frozen=True, slots=True)
class Transactions:
    """Every transaction type of a workload, numbered as its `names`; `pauses`, one per type, when
    its users wait before each transaction (empty: they never do)."""

    transactions: tuple[Transaction, ...]
    pauses: tuple[Pause, ...] = ()
    autocommit: bool = True  # False: the session's autocommit is off, and no BEGIN is sent
