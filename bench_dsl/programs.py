"""A user's transactions as the raw executor runs them (rawexec.Program), built from what its
workload says they are (statements.py): the statements prepared on the user's connection, and
each transaction's executions encoded as packets. Where the C core knows a transaction's shape
(sysbench's point selects and OLTP transactions), it draws and encodes them itself.

This runs once per connection; what it returns runs once per transaction, so each Program is
written for the interpreter: closures over locals, no work but drawing and encoding."""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping
from typing import Any

from bench_dsl import native
from bench_dsl.packets import BEGIN, COMMIT, Statement
from bench_dsl.rawexec import Program
from bench_dsl.statements import Drawn, NamedTransactions, OltpGroups, PointSelects, Statements

# what the statements of a group take, for the C core's Oltp: (id), (lo, hi), (c, id), (i) + (i, k, c, pad)
_OLTP_SHAPES = {"id": 0, "range": 1, "c_id": 2, "delete_insert": 3}
# values of the lengths the C core's Oltp writes: a template is the packet up to them (c is 119
# characters, pad 59, as sysbench's)
_C, _PAD = "0" * 119, "0" * 59
_SAMPLES = {"id": (0,), "range": (0, 0), "c_id": (_C, 0)}


async def build(conn: Any, statements: Statements) -> Program:
    """The Program of `statements`, prepared on `conn` (an asyncmy connection). Raises the driver's
    error when a statement cannot be prepared."""
    match statements:
        case NamedTransactions():
            return await _named(conn, statements)
        case Drawn():
            return _drawn(await _prepare(conn, statements.sql), statements)
        case PointSelects():
            return await _point_selects(conn, statements)
        case OltpGroups():
            return await _oltp(conn, statements)
    raise TypeError(f"not a description of statements: {statements!r}")


async def _prepare(conn: Any, sql: Mapping[Hashable, str]) -> dict[Hashable, Statement]:
    """Each statement prepared once (in the order given), by its key."""
    by_text: dict[str, Statement] = {}
    out: dict[Hashable, Statement] = {}
    for key, text in sql.items():
        st = by_text.get(text)
        if st is None:
            st = by_text[text] = Statement.of(await conn.prepare(text))
        out[key] = st
    return out


async def _named(conn: Any, statements: NamedTransactions) -> Program:
    prepared = await _prepare(conn, {sql: sql for t in statements.transactions for sql, _ in t.statements})
    plans = [(t.lets, [(prepared[sql].packet, names) for sql, names in t.statements], t.explicit)
             for t in statements.transactions]
    rng = statements.rng

    def transaction(tx: int) -> list[bytes]:
        lets, steps, explicit = plans[tx]
        values = {name: draw(rng) for name, draw in lets}
        packets = [BEGIN] if explicit else []
        packets += [packet(*[values[p] for p in names]) for packet, names in steps]
        if explicit:
            packets.append(COMMIT)
        return packets
    return transaction


def _drawn(prepared: dict[Hashable, Statement], statements: Drawn) -> Program:
    packet = {key: st.packet for key, st in prepared.items()}
    draw, explicit = statements.draw, statements.explicit

    def transaction(tx: int) -> list[bytes]:
        packets = [BEGIN] if explicit else []
        packets += [packet[key](*values) for key, values in draw(tx)]
        if explicit:
            packets.append(COMMIT)
        return packets
    return transaction


async def _point_selects(conn: Any, statements: PointSelects) -> Program:
    prepared = await _prepare(conn, dict(enumerate(statements.sql)))
    tables = len(statements.sql)
    keys = statements.special
    if native.core is not None and keys is not None:
        # the hottest workload drawn and encoded in C, with the session's random.Random: the same
        # tables and keys as the lines below
        return native.core.PointSelect(  # type: ignore[no-any-return]
            [prepared[t].int_head for t in range(tables)], statements.rng, keys.lo, keys.hi, keys.pct, keys.res,
            keys.iters)
    # the table drawn inline
    ones = [prepared[t].one for t in range(tables)]
    rnd, key = statements.rng.random, statements.key
    if tables == 1:
        one = ones[0]
        return lambda tx: (one(key()),)
    return lambda tx: (ones[int(rnd() * tables)](key()),)


async def _oltp(conn: Any, statements: OltpGroups) -> Program:
    # every statement prepared in the Python description's order, whichever way it runs
    prepared = await _prepare(conn, statements.python.sql)
    if native.core is None or type(statements.rng) is not random.Random:
        return _drawn(prepared, statements.python)
    # the whole transaction drawn and encoded in C (no GIL on the thread executor): the same
    # tables, keys and strings as the Python description, from the session's Random

    def heads(keys: tuple[Hashable, ...], *sample: int | str) -> tuple[bytes, ...]:
        return tuple(prepared[key].template(*sample) for key in keys)

    groups: list[tuple[int, int, tuple[bytes, ...], tuple[bytes, ...] | None]] = []
    for g in statements.groups:
        if g.shape == "delete_insert":
            assert g.insert_keys is not None
            groups.append((_OLTP_SHAPES[g.shape], g.count, heads(g.keys, 0), heads(g.insert_keys, 0, 0, _C, _PAD)))
        else:
            groups.append((_OLTP_SHAPES[g.shape], g.count, heads(g.keys, *_SAMPLES[g.shape]), None))
    k = statements.keys
    return native.core.Oltp(groups, statements.rng, k.lo, k.hi, k.pct, k.res, k.iters,  # type: ignore[no-any-return]
                            statements.range_size, statements.python.explicit)
