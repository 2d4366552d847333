"""The syntax tree of a .bench file: what was written, where, before any meaning is checked."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench_dsl.core.errors import Span


@dataclass(frozen=True, slots=True)
class Num:
    value: float
    text: str
    span: Span


@dataclass(frozen=True, slots=True)
class Qty:
    """A number with a unit written against it: 10s, 250ms, 80%, 256M, 3x."""

    value: float
    unit: str
    text: str
    span: Span


@dataclass(frozen=True, slots=True)
class Str:
    value: str
    span: Span


@dataclass(frozen=True, slots=True)
class Var:
    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class Word:
    """A bare identifier used as a value: on, off, O_DIRECT, deadlock."""

    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class WithUnit:
    """A number or reference followed by a unit word: 8 users, $start users, 100 tps."""

    inner: Num | Var
    unit: str
    span: Span


Expr = Num | Qty | Str | Var | Word | Call | WithUnit


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Let:
    name: str
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class TxQuery:
    sql: str
    span: Span


@dataclass(frozen=True, slots=True)
class TxRetry:
    count: Expr
    on: tuple[Word, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class TransactionNode:
    name: str
    weight: Expr | None
    retry: TxRetry | None
    body: tuple[Let | TxQuery, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class MixEntry:
    name: str
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Mix:
    entries: tuple[MixEntry, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class WorkloadNode:
    kind: str
    variant: str | None
    settings: tuple[Setting, ...]
    transactions: tuple[TransactionNode, ...]
    mixes: tuple[Mix, ...]  # every `mix { }` written, so that a second one can be reported
    span: Span
    kind_span: Span
    variant_span: Span | None


@dataclass(frozen=True, slots=True)
class MetricRef:
    name: str
    arg: str | None
    span: Span
    arg_span: Span | None = None  # the name in p90(name): where an unknown one is pointed at
    per_second: bool = False  # status(NAME)/s


@dataclass(frozen=True, slots=True)
class ConditionNode:
    kind: str  # "threshold", or the word of a comparison ("plateau", "kink", a plugin's): validation looks it up
    metric: MetricRef
    op: str | None
    limit: Expr
    window: Expr | None
    text: str  # as written in the file, quoted by every report
    span: Span
    kind_span: Span | None = None  # a comparison's word


@dataclass(frozen=True, slots=True)
class RampStep:
    items: tuple[tuple[str, Expr, Span], ...]  # ("start"|"add"|"mul"|"settle"|"hold"|"max", value, span)
    span: Span


@dataclass(frozen=True, slots=True)
class RampLinear:
    start: Expr
    end: Expr
    over: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Rate:
    """`rate 5000 tps`, `rate step { ... }`, `rate linear from A to B [over D]`, each [poisson|even]."""
    shape: str  # fixed | step | linear
    # fixed: ("rate", value); step: as RampStep's; linear: ("from", ...), ("to", ...)[, ("over", ...)]
    items: tuple[tuple[str, Expr, Span], ...]
    arrivals: str | None  # poisson | even | None (even)
    span: Span


@dataclass(frozen=True, slots=True)
class UsersPool:
    """`users max 256 [queue [N]]`: the users that serve a rate's arrivals."""
    max: Expr
    queue: bool
    queue_size: Expr | None
    span: Span


@dataclass(frozen=True, slots=True)
class LoadNode:
    """load NAME { setting* }: a load profile written in its own settings."""

    kind: str
    settings: tuple[Setting, ...]
    span: Span
    kind_span: Span


@dataclass(frozen=True, slots=True)
class FillNode:
    table: str
    rows: Expr
    columns: tuple[Setting, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class SetupSqlNode:
    sql: str
    span: Span


@dataclass(frozen=True, slots=True)
class Item:
    """A one-value scenario item: target, seed, users, warmup, duration, report, output, workers,
    repeat, on worker loss."""

    keyword: str
    value: Expr
    span: Span
    more: Expr | None = None  # a second value, where the item takes one (workers ray 8)
    rest: tuple[Expr, ...] = ()  # the values after the first, where the item takes several (power)


@dataclass(frozen=True, slots=True)
class Block:
    """server { }, stop when { }, expect { }, setup { }."""

    keyword: str
    entries: tuple[object, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class VaryLine:
    """One line of `vary { }`: a server setting, server.dir or a $variable, and its values."""

    key: str  # innodb_io_capacity, server.dir, $rows
    key_span: Span
    values: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Vary:
    lines: tuple[VaryLine, ...]
    zip: bool  # `vary { } zip`: the lines' values paired, not crossed
    span: Span


@dataclass(slots=True)
class ScenarioNode:
    name: str
    items: list[object] = field(default_factory=list)
    span: Span | None = None


@dataclass(slots=True)
class FileNode:
    lets: list[Let]
    scenario: ScenarioNode
    file: str
    text: str


def transactions_named(node: WorkloadNode) -> tuple[str, ...]:
    """The transactions a block writes out (or its test name): what a kind without a fixed set declares."""
    return tuple(t.name for t in node.transactions) or ((node.variant,) if node.variant else ())


def names_read(node: object) -> set[str]:
    """The $names a part of the tree reads, wherever they stand in it."""
    names: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Var):
            names.add(n.name)
        elif isinstance(n, (list, tuple)):
            stack.extend(n)
        elif hasattr(n, "__dataclass_fields__") and not isinstance(n, Span):
            stack.extend(getattr(n, f) for f in n.__dataclass_fields__)
    return names
