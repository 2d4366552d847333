"""sysbench's tables written from C (bench_dsl/native/src/load.c, through bench_dsl/native/loader.py)
against a real server: the rows sysbench would draw, the same for the same seed, the layout sysbench
makes, and a server's refusal said as the driver says it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import asyncmy.errors
import pytest

from bench_dsl.core.dsn import Dsn, parse_dsn
from bench_dsl.language.statements import Draw
from bench_dsl.native import loader
from bench_dsl.server.connect import connect, ensure_database
from bench_dsl.workloads.base import Progress
from bench_dsl.workloads.sysbench.plugin import SysbenchWorkload
from bench_dsl.workloads.sysbench.workload import Sysbench
from tests.conftest import fetch_all, run_bench

C = re.compile(r"^\d{11}(-\d{11}){9}$")
PAD = re.compile(r"^\d{11}(-\d{11}){4}$")



async def test_the_c_loader_writes_sysbenchs_rows_the_same_for_the_same_seed(server: tuple[Dsn, object]) -> None:
    dsn = server[0]
    await ensure_database(dsn)
    bulk = loader.bulk()
    assert bulk is not None  # the C executor is part of the set-up
    wl = Sysbench(SysbenchWorkload(test="oltp_point_select", tables=2, table_size=3000), 11)
    loaded = await wl.load(dsn, Progress(lambda _: None), bulk)
    assert loaded == 6000
    first = await fetch_all(dsn, "SELECT id, k, c, pad FROM sbtest2 ORDER BY id")
    assert [r[0] for r in first] == list(range(1, 3001))
    assert all(1 <= int(k) <= 3000 for _, k, _, _ in first)  # type: ignore[call-overload]
    assert all(C.match(str(c)) and PAD.match(str(pad)) for _, _, c, pad in first)
    assert len({r[1] for r in first}) > 1500  # uniform over 1..3000 (1 - 1/e of them: ~1,896), not a constant
    assert await fetch_all(dsn, "SHOW INDEX FROM sbtest2 WHERE Key_name = 'k_2'")  # the index, after the rows
    await wl.load(dsn, Progress(lambda _: None), bulk)
    assert await fetch_all(dsn, "SELECT id, k, c, pad FROM sbtest2 ORDER BY id") == first
    # the Python path draws other values in the same shape: either makes sysbench's tables
    await wl.load(dsn, Progress(lambda _: None), None)
    assert [r[0] for r in await fetch_all(dsn, "SELECT id FROM sbtest1 ORDER BY id")] == list(range(1, 3001))


async def test_a_refused_statement_is_said_as_the_driver_says_it(server: tuple[Dsn, object]) -> None:
    dsn = server[0]
    await ensure_database(dsn)
    conn = await connect(dsn, dsn.database)
    try:
        async with conn.cursor() as cur:
            await cur.execute("DROP TABLE IF EXISTS sbtest77")
    finally:
        conn.close()
    bulk = loader.bulk()
    assert bulk is not None
    with pytest.raises(asyncmy.errors.OperationalError) as exc:
        await bulk.rows(dsn, "sbtest77", ("id",), (Draw("sequence", (1,)),), 10, 1)
    assert exc.value.args[0] == 1146 and "sbtest77" in exc.value.args[1]


def test_loading_goes_on_while_the_loop_does(server: tuple[Dsn, object]) -> None:
    """A call writes its rows in a thread: the event loop is not held meanwhile."""
    dsn = server[0]
    bulk = loader.bulk()
    assert bulk is not None

    async def main() -> int:
        await ensure_database(dsn)
        conn = await connect(dsn, dsn.database)
        try:
            async with conn.cursor() as cur:
                await cur.execute("DROP TABLE IF EXISTS sbtest9")
                await cur.execute("CREATE TABLE sbtest9 (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60))")
        finally:
            conn.close()
        ticks = 0
        draws = (Draw("sequence", (1,)), Draw("uniform", (1, 9)), Draw("digits", (10,)), Draw("digits", (5,)))
        task = asyncio.create_task(bulk.rows(dsn, "sbtest9", ("id", "k", "c", "pad"), draws, 50_000, 3))
        while not task.done():
            ticks += 1
            await asyncio.sleep(0)
        await task
        return ticks

    assert asyncio.run(main()) > 1


def test_a_fill_is_written_from_c_every_row_once_and_its_text_as_written(dsn_url: str, tmp_path: Path) -> None:
    """`fill` in parts over several connections, drawn in C: the sequence whole and unbroken across
    the parts, the numbers in their bounds, and text beyond ASCII or holding quotes intact."""
    f = tmp_path / "fill.bench"
    f.write_text('scenario "fill" {\n  target env("BENCH_DSN")\n'
                 '  setup {\n    sql "CREATE TABLE IF NOT EXISTS filled (id INT PRIMARY KEY, n INT, r DOUBLE, '
                 'name VARCHAR(40) CHARACTER SET utf8mb4, s VARCHAR(20))"\n'
                 "    fill filled rows 250K { id = sequence(7)  n = uniform(3, 9)  r = uniform(0.5, 1.5)\n"
                 "      name = choice(\"O'Brien\", \"Ünal\", \"a\\\\b\")  s = randstr(4, 12) }\n  }\n"
                 '  workload custom { transaction t { query "SELECT n FROM filled WHERE id = 7" } }\n'
                 "  users 1  duration 1s\n}\n")
    r = run_bench("prepare", str(f), "--force-prepare", env={"BENCH_DSN": dsn_url})
    assert r.returncode == 0, r.stderr
    assert "fill filled: 250000 rows, drawn by the C loader" in r.stdout + r.stderr
    dsn = parse_dsn(dsn_url)
    (row,) = asyncio.run(fetch_all(dsn, "SELECT COUNT(*), MIN(id), MAX(id), COUNT(DISTINCT id), MIN(n), MAX(n), "
                                    "MIN(r), MAX(r), MIN(CHAR_LENGTH(s)), MAX(CHAR_LENGTH(s)) FROM filled"))
    assert row[:4] == (250_000, 7, 250_006, 250_000)
    assert (row[4], row[5]) == (3, 9) and float(row[6]) >= 0.5 and float(row[7]) <= 1.5  # type: ignore[arg-type]
    assert (row[8], row[9]) == (4, 12)
    names = {str(n) for (n,) in asyncio.run(fetch_all(dsn, "SELECT DISTINCT name FROM filled"))}
    assert names == {"O'Brien", "Ünal", "a\\b"}
