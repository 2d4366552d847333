"""What a workload's transactions are when they are nothing but prepared statements whose results
are never read: the SQL of each statement, the values each execution is given, and whether BEGIN
... COMMIT surrounds them. Workloads describe their transactions with these (Session.statements);
the raw executor (bench_dsl/programs.py) prepares the statements and turns each transaction into
the packets it sends. Neither side imports the other: this module is all they share.

Values are drawn with the user's own random.Random, so a run draws the same values whichever
executor sends them. Two shapes are sysbench's own (PointSelects, OltpGroups): the executor's C
core knows them and draws and encodes them without Python, exactly as their Python description
does."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class NamedTransaction:
    """One transaction type whose values are drawn by name (`let`), then given to its statements'
    parameters by name."""

    lets: tuple[tuple[str, Callable[[random.Random], object]], ...]  # (name, what draws it), drawn in order
    statements: tuple[tuple[str, tuple[str, ...]], ...]  # (SQL with ? placeholders, the names its ?s take)
    explicit: bool  # BEGIN before the statements, COMMIT after


@dataclass(frozen=True, slots=True)
class NamedTransactions:
    """Every transaction type of a session (custom's), numbered as the workload's `names`."""

    rng: random.Random
    transactions: tuple[NamedTransaction, ...]


@dataclass(frozen=True, slots=True)
class Drawn:
    """Transactions whose statements and values a function draws anew each time."""

    sql: Mapping[Hashable, str]  # every statement it may send (? placeholders), by a key of the workload's
    draw: Callable[[int], Iterable[tuple[Hashable, Sequence[object]]]]  # tx -> (key, values) per statement, in order
    explicit: bool  # BEGIN before the statements, COMMIT after


@dataclass(frozen=True, slots=True)
class SpecialKeys:
    """Keys drawn from sysbench's "special" distribution (generators.special(lo, hi, pct, res, iters))."""

    lo: int
    hi: int
    pct: float
    res: float
    iters: int


@dataclass(frozen=True, slots=True)
class PointSelects:
    """sysbench's oltp_point_select: one statement a transaction, on a table drawn uniformly
    (int(rng.random() * tables); no draw with one table), with a key from `key`."""

    sql: tuple[str, ...]  # per table, one integer parameter
    rng: random.Random
    key: Callable[[], int]
    special: SpecialKeys | None  # what `key` draws, when it is the distribution the C core draws


OltpShape = Literal["id", "range", "c_id", "delete_insert"]


@dataclass(frozen=True, slots=True)
class OltpGroup:
    """Statements run `count` times on one table drawn for the group: "id" (id), "range" (lo, lo +
    range_size - 1), "c_id" (c, id) or "delete_insert" (i) then (i, k, c, pad)."""

    shape: OltpShape
    count: int
    keys: tuple[Hashable, ...]  # per table, into `python.sql`
    insert_keys: tuple[Hashable, ...] | None  # delete_insert's INSERT per table


@dataclass(frozen=True, slots=True)
class OltpGroups:
    """A transaction of sysbench's other OLTP tests (oltp_read_write and the like) as the C core
    draws it: groups of statements, keys from `keys`, c and pad strings as sysbench's (119 and 59
    characters). `python` is the same transaction drawn in Python (what the C core is held to,
    and what runs without it), and names every statement."""

    groups: tuple[OltpGroup, ...]
    rng: random.Random
    keys: SpecialKeys
    range_size: int
    python: Drawn


Statements = NamedTransactions | Drawn | PointSelects | OltpGroups
