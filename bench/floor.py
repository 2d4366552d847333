"""The floors: the plainest Python clients bench-dsl could be, one process, uvloop, one server-side
prepared point select per loop, nothing measured per query. Mode `asyncmy` executes through the
driver (`PreparedStatement.execute`), ids drawn uniformly in Python; mode `raw` on the C executor
bench-dsl runs (executor.NativeUser: a thread per user over libmariadb), its point selects drawn in C
as bench-dsl's are (sysbench's default distribution), counted but never read. What a floor costs per query is what that way of executing
costs; whatever bench-dsl costs beyond the raw floor is the engine's (timing, counting, the run's
own work).

Run by the harness as `python -m bench.floor USERS WARMUP DURATION TABLES TABLE_SIZE [MODE]`, the address in
$BENCH_FLOOR_DSN (so that no password shows in a process list); prints one
JSON line when the measured part starts and one with the count when it ends (the harness takes its
CPU window between the two)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time

import asyncmy

from bench_dsl.core.dsn import Dsn
from bench_dsl.language.statements import Draw, Execute, StatementStep, Transaction, Transactions
from bench_dsl.measure.recorder import new_counts
from bench_dsl.native import executor


class _Floor:
    """The users' shared count and stop flag."""

    def __init__(self) -> None:
        self.driver_count = 0
        self.loops: list[executor.NativeUser] = []  # raw mode: each counts its own transactions
        self.stopped = False

    def count(self) -> int:
        return self.driver_count + sum(loop.completed for loop in self.loops)

    def stop(self) -> None:
        self.stopped = True
        for loop in self.loops:
            loop.stop = True


async def _native(dsn: Dsn, tables: int, size: int, seed: int, floor: _Floor) -> None:
    sql = tuple(f"SELECT c FROM sbtest{t} WHERE id=?" for t in range(1, tables + 1))
    key = Draw("special", (1, size, 1.0, 75.0, 12))
    step = StatementStep(1, tables, (key,), (Execute(sql, ((0, 0),)),))
    prog = executor.program(Transactions((Transaction((step,), False),)), (1.0,))
    user = executor.NativeUser(prog, new_counts(1), seed, executor.options(dsn, 10))
    try:
        outcome, code, message = await user.connect()
        if outcome != 0:
            raise RuntimeError(f"({code}) {message}")
        floor.loops.append(user)
        user.stop = floor.stopped
        await user.run(False)
    finally:
        user.close()


async def _user(args: dict[str, object], tables: int, size: int, seed: int, floor: _Floor, mode: str) -> None:
    rng = random.Random(seed)
    conn = await asyncmy.connect(**args, autocommit=True)
    try:
        stmts = [await conn.prepare(f"SELECT c FROM sbtest{t} WHERE id=?") for t in range(1, tables + 1)]
        while not floor.stopped:
            await stmts[rng.randrange(tables)].execute((rng.randint(1, size),))
            floor.driver_count += 1
    finally:
        conn.close()


async def main(dsn: str, users: int, warmup: float, duration: float, tables: int, size: int, mode: str) -> None:
    from bench_dsl.core.dsn import parse_dsn

    d = parse_dsn(dsn)
    args: dict[str, object] = {**d.connect_args(), "database": d.database}
    floor = _Floor()
    tasks = [asyncio.create_task(_native(d, tables, size, 1000 + i, floor) if mode == "raw" else
                                 _user(args, tables, size, 1000 + i, floor, mode)) for i in range(users)]
    await asyncio.sleep(warmup)
    start_count, t0 = floor.count(), time.perf_counter()
    print(json.dumps({"event": "start"}), flush=True)
    await asyncio.sleep(duration)
    count, secs = floor.count() - start_count, time.perf_counter() - t0
    print(json.dumps({"event": "end", "count": count, "seconds": round(secs, 4)}), flush=True)
    floor.stop()
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    users_, warmup_, duration_, tables_, size_ = sys.argv[1:6]
    mode_ = sys.argv[6] if len(sys.argv) > 6 else "asyncmy"
    coro = main(os.environ["BENCH_FLOOR_DSN"], int(users_), float(warmup_), float(duration_), int(tables_), int(size_),
                mode_)
    try:
        import uvloop

        uvloop.run(coro)
    except ImportError:
        asyncio.run(coro)
