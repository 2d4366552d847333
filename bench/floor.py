"""The floors: the plainest Python clients bench-dsl could be, one process, uvloop, one server-side
prepared point select per loop, uniform ids, nothing measured per query. Mode `asyncmy` executes
through the driver (`PreparedStatement.execute`); mode `raw` on bench-dsl's raw executor
(bench_dsl/rawexec.py) without recording anything. What a floor costs per query is what that way
of executing costs; whatever bench-dsl costs beyond the raw floor is the engine's.

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

from bench_dsl.rawexec import RECONNECT, RawLoop, Statement


async def _user(args: dict[str, object], tables: int, size: int, seed: int, box: list[int],
                stop: asyncio.Event, mode: str) -> None:
    rng = random.Random(seed)
    conn = await asyncmy.connect(**args, autocommit=True)
    try:
        stmts = [await conn.prepare(f"SELECT c FROM sbtest{t} WHERE id=?") for t in range(1, tables + 1)]
        if mode == "raw":
            raw = [Statement.of(st) for st in stmts]

            def count(i: int, us: int, q: int) -> None:
                box[0] += 1

            await RawLoop(conn,
                          lambda tx: (raw[rng.randrange(tables)].one(rng.randint(1, size)),),
                          lambda: 0, stop.is_set, count, lambda *a: RECONNECT).run()
            return
        while not stop.is_set():
            await stmts[rng.randrange(tables)].execute((rng.randint(1, size),))
            box[0] += 1
    finally:
        conn.close()


async def main(dsn: str, users: int, warmup: float, duration: float, tables: int, size: int, mode: str) -> None:
    from bench_dsl.dsn import parse_dsn

    d = parse_dsn(dsn)
    args: dict[str, object] = {**d.connect_args(), "database": d.database}
    box = [0]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_user(args, tables, size, 1000 + i, box, stop, mode)) for i in range(users)]
    await asyncio.sleep(warmup)
    start_count, t0 = box[0], time.perf_counter()
    print(json.dumps({"event": "start"}), flush=True)
    await asyncio.sleep(duration)
    count, secs = box[0] - start_count, time.perf_counter() - t0
    print(json.dumps({"event": "end", "count": count, "seconds": round(secs, 4)}), flush=True)
    stop.set()
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
