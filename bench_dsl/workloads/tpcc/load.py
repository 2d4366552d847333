"""Loading TPC-C data per clause 4.3, fast.

The server makes the rows itself: each statement is an INSERT ... SELECT over a numbers table, its
random values drawn with seeded RAND() and its random strings cut from a pool of random characters
sent once. The client sends a few hundred short statements over several connections and spends
almost no CPU, which on a small machine is CPU the server gets to insert with; nor does the
server parse a hundred megabytes of VALUES text. Each RAND() has its own seed, derived from the
scenario's seed and the unit of work, so a load is reproducible apart from its timestamps.

Needs window functions (MariaDB 10.2, MySQL 8.0) for the random permutation of O_C_ID."""

from __future__ import annotations

import asyncio
import os
import random
from collections import deque
from dataclasses import dataclass

import asyncmy

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import TargetError, error_reason
from bench_dsl.core.mysql_errors import RETRYABLE
from bench_dsl.server.connect import connect
from bench_dsl.workloads.base import Progress
from bench_dsl.workloads.tpcc.data import (
    CUSTOMERS_PER_DISTRICT,
    DISTRICTS_PER_WAREHOUSE,
    FIRST_UNDELIVERED,
    ITEMS,
    ORDERS_PER_DISTRICT,
    SYLLABLES,
    load_constant,
    total_rows,
)
from bench_dsl.workloads.tpcc.schema import (
    CONSTANTS,
    CONSTANTS_TABLE,
    SCHEMA_VERSION,
    TABLES,
)

POOL_TABLE = "tpcc_pool"
NUMS_TABLE = "tpcc_nums"
POOL_CHARS = 1 << 20  # random alphanumeric characters; a statement under MySQL 5.7's 4 MB packet limit
DIGIT_CHARS = 1 << 16
ITEM_CHUNK = 25_000
STOCK_CHUNK = 25_000
# A LIMIT keeps a derived table from being merged into the outer query, so that a random value used
# twice in a row (a string's length, the ORIGINAL flag, a last name's number) is drawn once.
MATERIALIZE = "LIMIT 4294967295"

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_SYLLABLES_SQL = ", ".join(f"'{s}'" for s in SYLLABLES)


class _Rand:
    """`RAND(n)` with a new seed at each use: every random column of a statement draws its own
    sequence, and the whole load follows from the seed."""

    def __init__(self, seed: int, *unit: int) -> None:
        self._rng = random.Random(hash((seed, *unit)))

    def __call__(self) -> str:
        return f"RAND({self._rng.randrange(1, 2**31)})"


def _int(r: _Rand, lo: int, hi: int) -> str:
    """Uniform integer in [lo, hi] (clause 4.3.2.5)."""
    return f"{lo} + FLOOR({r()} * {hi - lo + 1})" if lo else f"FLOOR({r()} * {hi + 1})"


def _astr(r: _Rand, lo: int, hi: int) -> str:
    """Random a-string of lo..hi characters (clause 4.3.2.2)."""
    length = str(lo) if lo == hi else _int(r, lo, hi)
    return f"SUBSTRING(p.alnum, {_int(r, 1, POOL_CHARS - hi)}, {length})"


def _address(r: _Rand) -> str:
    """Street 1, street 2, city, state, zip (clause 4.3.2.7: four random digits then 11111)."""
    return (f"{_astr(r, 10, 20)}, {_astr(r, 10, 20)}, {_astr(r, 10, 20)}, "
            f"CONCAT(CHAR({_int(r, 65, 90)} USING ascii), CHAR({_int(r, 65, 90)} USING ascii)), "
            f"CONCAT(SUBSTRING(p.digits, {_int(r, 1, DIGIT_CHARS - 4)}, 4), '11111')")


def _original(data_off: str, data_len: str, flag: str, pos: str) -> str:
    """I_DATA / S_DATA: for 10% of rows, "ORIGINAL" at a random position (clause 4.3.3.1)."""
    data = f"SUBSTRING(p.alnum, {data_off}, {data_len})"
    return f"IF({flag}, INSERT({data}, 1 + FLOOR({pos} * ({data_len} - 7)), 8, 'ORIGINAL'), {data})"


POOL_JOIN = f"JOIN {POOL_TABLE} p ON p.id = 1"


def item_sql(r: _Rand, lo: int, hi: int) -> str:
    return (f"INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data) "
            f"SELECT n, im, {_astr(r, 14, 24)}, price, {_original('o', 'l', 'orig', 'pos')} "
            f"FROM (SELECT n, {_int(r, 1, 10_000)} AS im, ({_int(r, 100, 10_000)}) / 100 AS price, "
            f"{_int(r, 1, POOL_CHARS - 50)} AS o, {_int(r, 26, 50)} AS l, {r()} < 0.1 AS orig, {r()} AS pos "
            f"FROM {NUMS_TABLE} WHERE n BETWEEN {lo} AND {hi} ORDER BY n {MATERIALIZE}) x {POOL_JOIN}")


def warehouse_sql(r: _Rand, w: int) -> str:
    return (f"INSERT INTO warehouse (w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd) "
            f"SELECT {w}, {_astr(r, 6, 10)}, {_address(r)}, ({_int(r, 0, 2000)}) / 10000, 300000 "
            f"FROM {POOL_TABLE} p WHERE p.id = 1")


def district_sql(r: _Rand, w: int) -> str:
    return (f"INSERT INTO district (d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, "
            f"d_ytd, d_next_o_id) "
            f"SELECT n, {w}, {_astr(r, 6, 10)}, {_address(r)}, ({_int(r, 0, 2000)}) / 10000, 30000, "
            f"{ORDERS_PER_DISTRICT + 1} FROM {NUMS_TABLE} {POOL_JOIN} WHERE n <= {DISTRICTS_PER_WAREHOUSE} ORDER BY n")


def stock_sql(r: _Rand, w: int, lo: int, hi: int) -> str:
    dists = ", ".join(f"SUBSTRING(p.alnum, o + {24 * k}, 24)" for k in range(10))
    return (f"INSERT INTO stock (s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, "
            f"s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, s_remote_cnt, s_data) "
            f"SELECT n, {w}, q, {dists}, 0, 0, 0, {_original('o2', 'l', 'orig', 'pos')} "
            f"FROM (SELECT n, {_int(r, 10, 100)} AS q, {_int(r, 1, POOL_CHARS - 240)} AS o, "
            f"{_int(r, 1, POOL_CHARS - 50)} AS o2, {_int(r, 26, 50)} AS l, {r()} < 0.1 AS orig, {r()} AS pos "
            f"FROM {NUMS_TABLE} WHERE n BETWEEN {lo} AND {hi} ORDER BY n {MATERIALIZE}) x {POOL_JOIN}")


def customer_sql(r: _Rand, w: int, d: int, c_load: int) -> str:
    # C_LAST: customers 1..1000 take the names 0..999 in turn, the others NURand(255, 0, 999) with C_LOAD.
    name = (f"CONCAT(ELT(1 + ln DIV 100, {_SYLLABLES_SQL}), ELT(1 + (ln DIV 10) % 10, {_SYLLABLES_SQL}), "
            f"ELT(1 + ln % 10, {_SYLLABLES_SQL}))")
    return (f"INSERT INTO customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, "
            f"c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, "
            f"c_payment_cnt, c_delivery_cnt, c_data) "
            f"SELECT n, {d}, {w}, {_astr(r, 8, 16)}, 'OE', {name}, {_address(r)}, "
            f"SUBSTRING(p.digits, {_int(r, 1, DIGIT_CHARS - 16)}, 16), NOW(), IF({r()} < 0.1, 'BC', 'GC'), 50000, "
            f"({_int(r, 0, 5000)}) / 10000, -10, 10, 1, 0, {_astr(r, 300, 500)} "
            f"FROM (SELECT n, IF(n <= 1000, n - 1, ((FLOOR({r()} * 256) | FLOOR({r()} * 1000)) + {c_load}) % 1000) "
            f"AS ln "
            f"FROM {NUMS_TABLE} WHERE n <= {CUSTOMERS_PER_DISTRICT} ORDER BY n {MATERIALIZE}) x {POOL_JOIN}")


def history_sql(r: _Rand, w: int, d: int) -> str:
    return (f"INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
            f"SELECT n, {d}, {w}, {d}, {w}, NOW(), 10, {_astr(r, 12, 24)} "
            f"FROM {NUMS_TABLE} {POOL_JOIN} WHERE n <= {CUSTOMERS_PER_DISTRICT} ORDER BY n")


def orders_sql(r: _Rand, w: int, d: int) -> str:
    # O_C_ID: the district's customers in random order, i.e. a random permutation of 1..3000.
    return (f"INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) "
            f"SELECT o, {d}, {w}, c, NOW(), IF(o < {FIRST_UNDELIVERED}, {_int(r, 1, 10)}, NULL), {_int(r, 5, 15)}, 1 "
            f"FROM (SELECT n AS c, ROW_NUMBER() OVER (ORDER BY {r()}) AS o FROM {NUMS_TABLE} "
            f"WHERE n <= {ORDERS_PER_DISTRICT} {MATERIALIZE}) x ORDER BY o")


def order_line_sql(r: _Rand, w: int, d: int) -> str:
    return (f"INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, "
            f"ol_quantity, ol_amount, ol_dist_info) "
            f"SELECT o_id, o_d_id, o_w_id, k.n, {_int(r, 1, ITEMS)}, o_w_id, "
            f"IF(o_id < {FIRST_UNDELIVERED}, o_entry_d, NULL), 5, "
            f"IF(o_id < {FIRST_UNDELIVERED}, 0, ({_int(r, 1, 999_999)}) / 100), {_astr(r, 24, 24)} "
            f"FROM orders JOIN {NUMS_TABLE} k ON k.n <= o_ol_cnt {POOL_JOIN} "
            f"WHERE o_w_id = {w} AND o_d_id = {d} ORDER BY o_id, k.n")


def new_orders_sql(w: int, d: int) -> str:
    return (f"INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) SELECT n, {d}, {w} FROM {NUMS_TABLE} "
            f"WHERE n BETWEEN {FIRST_UNDELIVERED} AND {ORDERS_PER_DISTRICT} ORDER BY n")


@dataclass(frozen=True, slots=True)
class Unit:
    """Statements one connection runs in order (an order's lines need the order first)."""

    what: str
    statements: tuple[str, ...]


def plan_units(warehouses: int, seed: int, c_load: int) -> list[Unit]:
    """Every statement of a load, largest units first so that no connection is left with a long tail."""
    stock, orders, customers, items, small = [], [], [], [], []
    for lo in range(1, ITEMS + 1, ITEM_CHUNK):
        hi = min(ITEMS, lo + ITEM_CHUNK - 1)
        items.append(Unit(f"items {lo}-{hi}", (item_sql(_Rand(seed, 1, lo), lo, hi),)))
    for w in range(1, warehouses + 1):
        small.append(Unit(f"warehouse {w}", (warehouse_sql(_Rand(seed, 2, w), w), district_sql(_Rand(seed, 3, w), w))))
        for lo in range(1, ITEMS + 1, STOCK_CHUNK):
            hi = min(ITEMS, lo + STOCK_CHUNK - 1)
            stock.append(Unit(f"stock of warehouse {w}, items {lo}-{hi}",
                              (stock_sql(_Rand(seed, 4, w, lo), w, lo, hi),)))
        for d in range(1, DISTRICTS_PER_WAREHOUSE + 1):
            customers.append(Unit(f"customers of warehouse {w} district {d}",
                                  (customer_sql(_Rand(seed, 5, w, d), w, d, c_load),
                                   history_sql(_Rand(seed, 6, w, d), w, d))))
            orders.append(Unit(f"orders of warehouse {w} district {d}",
                               (orders_sql(_Rand(seed, 7, w, d), w, d), new_orders_sql(w, d),
                                order_line_sql(_Rand(seed, 8, w, d), w, d))))
    return [*stock, *orders, *customers, *items, *small]


def default_connections() -> int:
    """One loading connection per core, at least two so that the client never idles the server."""
    return max(2, min(16, os.cpu_count() or 2))


async def _setup(conn: asyncmy.Connection, warehouses: int, seed: int, c_load: int) -> None:
    rng = random.Random(hash((seed, 0)))
    alnum = "".join(rng.choices(_ALNUM, k=POOL_CHARS))
    digits = "".join(rng.choices("0123456789", k=DIGIT_CHARS))
    async with conn.cursor() as cur:
        for name in (*TABLES, CONSTANTS_TABLE, POOL_TABLE, NUMS_TABLE):
            await cur.execute(f"DROP TABLE IF EXISTS {name}")
        for ddl in TABLES.values():
            await cur.execute(ddl)
        await cur.execute(CONSTANTS)
        await cur.execute(f"CREATE TABLE {POOL_TABLE} (id TINYINT NOT NULL PRIMARY KEY, alnum LONGBLOB NOT NULL, "
                          "digits MEDIUMBLOB NOT NULL) ENGINE=InnoDB")
        # The pool holds only letters and digits: nothing to escape.
        await cur.execute(f"INSERT INTO {POOL_TABLE} VALUES (1, '{alnum}', '{digits}')")
        await cur.execute(f"CREATE TABLE {NUMS_TABLE} (n INT UNSIGNED NOT NULL PRIMARY KEY) ENGINE=InnoDB")
        await cur.execute(f"INSERT INTO {NUMS_TABLE} VALUES " + ",".join(f"({i})" for i in range(1, ITEMS + 1)))
        await cur.execute(f"INSERT INTO {CONSTANTS_TABLE} (name, value) VALUES (%s, %s), (%s, %s), (%s, %s)",
                          ("c_last", c_load, "warehouses", warehouses, "schema", SCHEMA_VERSION))


LOAD_RETRIES = 5  # a deadlocked load statement is run again this many times


async def load(dsn: Dsn, warehouses: int, seed: int, progress: Progress, connections: int | None = None) -> int:
    """Drop and recreate the TPC-C tables, fill them for `warehouses` warehouses; return the rows written."""
    c_load = load_constant(seed)
    n_conn = connections or default_connections()
    units = deque(plan_units(warehouses, seed, c_load))
    n_conn = min(n_conn, len(units))
    total = total_rows(warehouses)
    conn = await connect(dsn, dsn.database)
    try:
        progress(f"creating the TPC-C tables for {warehouses} warehouse(s)")
        await _setup(conn, warehouses, seed, c_load)
        progress(f"loading about {total:,} rows over {n_conn} connections")
        done = 0
        progress.rows(0, total)

        async def worker() -> None:
            nonlocal done
            wc = await connect(dsn, dsn.database)
            try:
                # Keys are generated unique; checking them again only slows the load. READ COMMITTED:
                # INSERT ... SELECT then takes no shared locks on the numbers and pool tables.
                await wc.query("SET SESSION unique_checks = 0, foreign_key_checks = 0")
                await wc.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                while units:
                    unit = units.popleft()
                    for sql in unit.statements:
                        for attempt in range(LOAD_RETRIES + 1):
                            try:
                                n = await wc.query(sql)
                                break
                            except asyncmy.errors.MySQLError as exc:
                                # parallel inserts into one table can still deadlock on gap locks;
                                # each statement is its own transaction, rolled back whole: run it again
                                if exc.args and exc.args[0] in RETRYABLE and attempt < LOAD_RETRIES:
                                    await asyncio.sleep(0.05 * (attempt + 1))
                                    continue
                                raise TargetError(f"loading the TPC-C data failed on {unit.what}: "
                                                  f"{error_reason(exc)}") from None
                        done += n  # not `done += await ...`: that reads `done` before the wait
                        progress.rows(done, max(total, done))
            finally:
                wc.close()

        try:
            async with asyncio.TaskGroup() as tg:
                for _ in range(n_conn):
                    tg.create_task(worker())
        except BaseExceptionGroup as group:
            first = group.exceptions[0]
            if isinstance(first, TargetError):
                raise first from None
            raise TargetError(f"loading the TPC-C data failed: {error_reason(first)}") from first
        progress.rows(done, done)
        async with conn.cursor() as cur:
            await cur.execute(f"DROP TABLE {POOL_TABLE}, {NUMS_TABLE}")
            # Fresh statistics, so that the run's first plans are the right ones.
            await cur.execute(f"ANALYZE TABLE {', '.join(TABLES)}")
            await cur.fetchall()
    finally:
        conn.close()
    return done

