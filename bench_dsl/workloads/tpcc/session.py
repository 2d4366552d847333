"""TPC-C's terminals in client-side mode (`procedures = off`): the random inputs of the five
transactions (clauses 2.4.1 to 2.8.1, shared with tpcc_procs), keying and think times (clause
5.2.5), and the few server-side prepared statements each transaction is sent as."""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import asyncmy

from bench_dsl.workloads.base import IntendedRollback, Session, rollback_quietly
from bench_dsl.workloads.tpcc.data import (
    A_C_ID,
    A_C_LAST,
    A_OL_I_ID,
    BY_LAST_NAME,
    CARRIERS,
    CUSTOMERS_PER_DISTRICT,
    DISTRICTS_PER_WAREHOUSE,
    ITEMS,
    LAST_NAMES,
    NEW_ORDER_ROLLBACK,
    PAYMENT_CENTS,
    REMOTE_LINE,
    REMOTE_PAYMENT,
    STOCK_THRESHOLD,
    RunConstants,
)

if TYPE_CHECKING:
    from bench_dsl.workloads.tpcc.workload import Tpcc

MAX_LINES = 15  # an order has 5 to 15 lines: IN lists are padded to this many entries

# Clause 5.2.5.7: keying time and mean think time, in seconds, per transaction (TPCC_TRANSACTIONS order).
KEYING_S = (18.0, 3.0, 2.0, 2.0, 2.0)
THINK_MEAN_S = (12.0, 12.0, 10.0, 5.0, 5.0)
THINK_CUT = 10  # clause 5.2.5.4: a think time is cut at 10 times its mean


def keying_time(tx: int) -> float:
    return KEYING_S[tx]


def think_time(tx: int, rng: random.Random) -> float:
    """Clause 5.2.5.4: negative exponential with the transaction's mean, cut at 10 times the mean."""
    mean = THINK_MEAN_S[tx]
    return min(-math.log(1.0 - rng.random()) * mean, THINK_CUT * mean)



# Statements of the client-side mode. `?` are bound by the server (prepared statements).
_IN15 = ", ".join(["?"] * MAX_LINES)
_PAIRS15 = ", ".join(["(?, ?)"] * MAX_LINES)
_PAIRS10 = ", ".join(["(?, ?)"] * DISTRICTS_PER_WAREHOUSE)

SQL: dict[str, str] = {
    # New-Order. The head row (i_id 0) carries the customer, warehouse and district; the others the items.
    # Prices also come in cents, so that amounts are summed as integers.
    "no_head_items": "SELECT 0, c_discount, c_last, c_credit, w_tax + d_tax, 0 FROM warehouse "
                     "JOIN district ON d_w_id = w_id JOIN customer ON c_w_id = w_id AND c_d_id = d_id "
                     "WHERE w_id = ? AND d_id = ? AND c_id = ? UNION ALL SELECT i_id, i_price, i_name, i_data, "
                     f"NULL, CAST(i_price * 100 AS UNSIGNED) FROM item WHERE i_id IN ({_IN15})",
    "no_stock": "SELECT s_w_id, s_i_id, s_quantity, s_data, ELT(?, s_dist_01, s_dist_02, s_dist_03, s_dist_04, "
                "s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10) FROM stock "
                f"WHERE (s_w_id, s_i_id) IN ({_PAIRS15}) FOR UPDATE",
    "no_stock_update": "UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + ?, "
                       "s_remote_cnt = s_remote_cnt + ? WHERE s_w_id = ? AND s_i_id = ?",
    # LAST_INSERT_ID(x) hands the new order id back in the OK packet: no SELECT needed.
    "no_district": "UPDATE district SET d_next_o_id = LAST_INSERT_ID(d_next_o_id + 1) WHERE d_w_id = ? AND d_id = ?",
    "no_order": "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) "
                "VALUES (?, ?, ?, ?, NOW(), ?, ?)",
    "no_new_order": "INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)",
    "no_line": "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, "
               "ol_amount, ol_dist_info) VALUES (?, ?, ?, ?, ?, ?, ?, ? / 100, ?)",
    # Payment and Order-Status: the customer by last name is the middle one by first name (2.5.2.2).
    "customer_by_name": "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first",
    "pay_customer": "UPDATE customer SET c_balance = c_balance - ? / 100, c_ytd_payment = c_ytd_payment + ? / 100, "
                    "c_payment_cnt = c_payment_cnt + 1, c_data = IF(c_credit = 'BC', LEFT(CONCAT_WS(' ', c_id, c_d_id, "
                    "c_w_id, ?, ?, ? / 100, '|', c_data), 500), c_data) WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
    "pay_read": "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, "
                "c_credit, c_credit_lim, c_discount, c_balance, IF(c_credit = 'BC', LEFT(c_data, 200), NULL), "
                "w_name, w_street_1, w_street_2, w_city, w_state, w_zip, "
                "d_name, d_street_1, d_street_2, d_city, d_state, d_zip "
                "FROM customer, warehouse JOIN district ON d_w_id = w_id "
                "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? AND w_id = ? AND d_id = ?",
    "pay_history": "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
                   "VALUES (?, ?, ?, ?, ?, NOW(), ? / 100, ?)",
    # Last: the warehouse row is every payment's hot spot, so its lock is held for one round trip.
    "pay_ytd": "UPDATE warehouse JOIN district ON d_w_id = w_id SET w_ytd = w_ytd + ? / 100, d_ytd = d_ytd + ? / 100 "
               "WHERE w_id = ? AND d_id = ?",
    "os_read": "SELECT c_balance, c_first, c_middle, c_last, o_id, o_entry_d, o_carrier_id, "
               "ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM customer "
               "JOIN orders ON o_w_id = c_w_id AND o_d_id = c_d_id AND o_id = "
               "(SELECT MAX(o_id) FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ?) "
               "JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
               "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
    # Delivery: the oldest undelivered order of each district, locked (one LIMIT 1 per district).
    "dl_oldest": " UNION ALL ".join(
        f"(SELECT no_d_id, no_o_id FROM new_orders WHERE no_w_id = ? AND no_d_id = {d} "
        "ORDER BY no_o_id LIMIT 1 FOR UPDATE)" for d in range(1, DISTRICTS_PER_WAREHOUSE + 1)),
    "dl_sums": "SELECT o_d_id, o_c_id, SUM(ol_amount) FROM orders JOIN order_line ON ol_w_id = o_w_id "
               f"AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE o_w_id = ? AND (o_d_id, o_id) IN ({_PAIRS10}) "
               "GROUP BY o_d_id, o_c_id",
    "dl_delete": f"DELETE FROM new_orders WHERE no_w_id = ? AND (no_d_id, no_o_id) IN ({_PAIRS10})",
    "dl_deliver": "UPDATE orders JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
                  f"SET o_carrier_id = ?, ol_delivery_d = NOW() WHERE o_w_id = ? AND (o_d_id, o_id) IN ({_PAIRS10})",
    "dl_customer": "UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 "
                   "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
    "sl_count": "SELECT COUNT(DISTINCT s_i_id) FROM district JOIN order_line ON ol_w_id = d_w_id AND ol_d_id = d_id "
                "AND ol_o_id >= d_next_o_id - 20 AND ol_o_id < d_next_o_id JOIN stock ON s_w_id = ol_w_id "
                "AND s_i_id = ol_i_id AND s_quantity < ? WHERE d_w_id = ? AND d_id = ?",
}


# Where the server has JSON_TABLE (MariaDB 10.6, MySQL 8.0.4), a list of keys goes as one JSON
# parameter joined to the table: planning that join costs the server half what planning a row
# IN (...) list does (range analysis of every pair), and the lists need no padding. Stocks are
# joined in key order, as the client sorts them, so concurrent orders lock them in one order.
_JSON_KEYS = "JSON_TABLE(?, '$[*]' COLUMNS (d INT PATH '$[0]', o INT PATH '$[1]')) k"
SQL_JSON: dict[str, str] = {
    "no_head_items": SQL["no_head_items"].split(" UNION ALL ")[0] + " UNION ALL SELECT i_id, i_price, i_name, "
                     "i_data, NULL, CAST(i_price * 100 AS UNSIGNED) "
                     "FROM JSON_TABLE(?, '$[*]' COLUMNS (i INT PATH '$')) l JOIN item ON i_id = l.i",
    "no_stock": SQL["no_stock"].split(" FROM stock ")[0] + " FROM JSON_TABLE(?, '$[*]' COLUMNS (w INT PATH '$[0]', "
                "i INT PATH '$[1]')) l JOIN stock ON s_w_id = l.w AND s_i_id = l.i FOR UPDATE",
    "dl_sums": f"SELECT o_d_id, o_c_id, SUM(ol_amount) FROM {_JSON_KEYS} JOIN orders ON o_w_id = ? AND o_d_id = k.d "
               "AND o_id = k.o JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
               "GROUP BY o_d_id, o_c_id",
    "dl_delete": f"DELETE new_orders FROM {_JSON_KEYS} JOIN new_orders ON no_w_id = ? AND no_d_id = k.d "
                 "AND no_o_id = k.o",
    "dl_deliver": f"UPDATE {_JSON_KEYS} JOIN orders ON o_w_id = ? AND o_d_id = k.d AND o_id = k.o "
                  "JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
                  "SET o_carrier_id = ?, ol_delivery_d = NOW()",
}


class Inputs:
    """The random inputs of the five transactions (clauses 2.4.1 to 2.8.1), shared by both modes."""

    def __init__(self, wl: Tpcc, rng: random.Random, w: int, d_stock_level: int) -> None:
        self.rng = rng
        self.w = w
        self.warehouses = wl.spec.warehouses
        self.d_stock_level = d_stock_level
        self.wl = wl
        self.think = 0.0  # the think time owed after the previous transaction

    def pause_before(self, tx: int) -> float:
        """Seconds a terminal waits before transaction `tx`: the think time of the one before, then
        this one's keying time (clause 5.2.5.7). Draws the think time that will follow `tx`."""
        wait = self.think + KEYING_S[tx]
        self.think = think_time(tx, self.rng)
        return wait

    def nurand(self, a: int, x: int, y: int, c: int) -> int:
        rnd = self.rng.random
        return (((int(rnd() * (a + 1)) | (x + int(rnd() * (y - x + 1)))) + c) % (y - x + 1)) + x

    def district(self) -> int:
        return 1 + int(self.rng.random() * DISTRICTS_PER_WAREHOUSE)

    def other_warehouse(self) -> int:
        """A warehouse other than the home one, uniformly (only called with two or more)."""
        o = 1 + int(self.rng.random() * (self.warehouses - 1))
        return o + 1 if o >= self.w else o

    def customer(self, k: RunConstants) -> tuple[int, str | None]:
        """60% of Payment and Order-Status inputs name the customer by last name (2.5.1.2, 2.6.1.2)."""
        if self.rng.random() < BY_LAST_NAME:
            return 0, LAST_NAMES[self.nurand(A_C_LAST, 0, 999, k.c_last)]
        return self.nurand(A_C_ID, 1, CUSTOMERS_PER_DISTRICT, k.c_id), None

    def new_order(self, k: RunConstants) -> tuple[int, int, list[int], list[int], list[int], bool]:
        """District, customer, items, supplying warehouses, quantities, and whether it rolls back:
        1% of orders end on an unused item (2.4.1.4), 1% of lines come from another warehouse (2.4.1.5)."""
        rnd = self.rng.random
        d = self.district()
        c = self.nurand(A_C_ID, 1, CUSTOMERS_PER_DISTRICT, k.c_id)
        count = 5 + int(rnd() * 11)
        rollback = rnd() < NEW_ORDER_ROLLBACK
        items = [self.nurand(A_OL_I_ID, 1, ITEMS, k.ol_i_id) for _ in range(count)]
        if rollback:
            items[-1] = ITEMS + 1
        remote = self.warehouses > 1
        supply = [self.other_warehouse() if remote and rnd() < REMOTE_LINE else self.w for _ in range(count)]
        quantities = [1 + int(rnd() * 10) for _ in range(count)]
        return d, c, items, supply, quantities, rollback

    def payment(self, k: RunConstants) -> tuple[int, int, int, int, str | None, int]:
        """District, customer's warehouse and district (15% remote, 2.5.1.2), customer id or last name,
        amount in cents (1.00 to 5,000.00)."""
        rnd = self.rng.random
        d = self.district()
        if self.warehouses > 1 and rnd() < REMOTE_PAYMENT:
            c_w, c_d = self.other_warehouse(), self.district()
        else:
            c_w, c_d = self.w, d
        c, last = self.customer(k)
        lo, hi = PAYMENT_CENTS
        return d, c_w, c_d, c, last, lo + int(rnd() * (hi - lo + 1))

    def carrier(self) -> int:
        return 1 + int(self.rng.random() * CARRIERS)

    def threshold(self) -> int:
        lo, hi = STOCK_THRESHOLD
        return lo + int(self.rng.random() * (hi - lo + 1))


class TpccSession(Session):
    """One terminal in client-side mode: a home warehouse, prepared statements, five transactions."""

    use_json = True  # False: row IN lists even where the server has JSON_TABLE (what older servers get)

    def __init__(self, wl: Tpcc, rng: random.Random, w: int, d_stock_level: int) -> None:
        self.wl = wl
        self.rng = rng
        self.w = w
        self.inputs = Inputs(wl, rng, w, d_stock_level)
        self.conn: asyncmy.Connection | None = None
        self.st: dict[str, Any] = {}
        self.bulk = False
        self.json = False
        self.k: RunConstants | None = wl.constants
        self.txs: tuple[Callable[[asyncmy.Connection], Awaitable[int]], ...] = (
            self.new_order, self.payment, self.order_status, self.delivery, self.stock_level)

    def forget(self) -> None:
        self.conn = None
        self.st = {}

    async def pause(self, tx: int) -> None:
        """Clause 5.2.5's waits before transaction `tx` (keying_time = on), outside its response time."""
        await asyncio.sleep(self.inputs.pause_before(tx))

    async def _setup(self, conn: asyncmy.Connection) -> None:
        self.st = {}
        # Every transaction ends with an explicit COMMIT, so no BEGIN round trip is needed, and the
        # server's Com_commit counts each one (the server-side TPM).
        await conn.autocommit(False)
        json_st: dict[str, Any] = {}
        if self.use_json:
            try:
                json_st = {name: await conn.prepare(sql) for name, sql in SQL_JSON.items()}
            except asyncmy.errors.ProgrammingError:  # no JSON_TABLE (a syntax error): row IN lists instead
                json_st = {}
        self.json = bool(json_st)
        for name, sql in SQL.items():
            self.st[name] = json_st.get(name) or await conn.prepare(sql)
        self.bulk = bool(getattr(conn, "_bulk_supported", False))  # MariaDB's COM_STMT_BULK_EXECUTE
        if self.k is None:
            self.k = await self.wl._load_constants(conn)
        self.conn = conn

    async def _many(self, name: str, rows: Sequence[tuple[Any, ...]]) -> int:
        """One round trip for many rows where the server can (MariaDB), else one per row; returns
        the statements sent."""
        st = self.st[name]
        if self.bulk and len(rows) > 1:
            await st.execute_bulk(rows)
            return 1
        for r in rows:
            await st.execute(r)
        return len(rows)

    async def run(self, conn: asyncmy.Connection, tx: int) -> int:
        if conn is not self.conn:
            await self._setup(conn)
        try:
            return await self.txs[tx](conn)
        except IntendedRollback:
            raise
        except BaseException:
            await rollback_quietly(conn)
            raise

    # The five transactions. Each returns the statements it sent, COMMIT included. -------------------
    async def new_order(self, conn: asyncmy.Connection) -> int:
        st, w = self.st, self.w
        assert self.k is not None
        d, c, items, supply, quantities, rollback = self.inputs.new_order(self.k)
        count = len(items)
        if self.json:
            head, *found = (await st["no_head_items"].execute((w, d, c, json.dumps(items)))).rows
        else:
            pad_items = items + [items[0]] * (MAX_LINES - count)
            head, *found = (await st["no_head_items"].execute((w, d, c, *pad_items))).rows
        if head[0] != 0:  # UNION ALL returns its parts in order; guard against a plan that does not
            rows = (head, *found)
            head = next(r for r in rows if r[0] == 0)
            found = [r for r in rows if r[0] != 0]
        item = {r[0]: r for r in found}
        if self.json:
            wanted = json.dumps(sorted({(sw, i) for i, sw in zip(items, supply) if i in item}))
            stock = {(r[0], r[1]): r for r in (await st["no_stock"].execute((d, wanted))).rows}
        else:
            keys: list[int] = []
            for i, sw in zip(items, supply):
                if i in item:
                    keys += (sw, i)
            keys += keys[:2] * (MAX_LINES - len(keys) // 2)
            stock = {(r[0], r[1]): r for r in (await st["no_stock"].execute((d, *keys))).rows}
        # Lines may repeat an item: each line takes its quantity from what the previous one left.
        left: dict[tuple[int, int], list[int]] = {}
        lines: list[tuple[int, int, int, int, int, str]] = []
        total = 0  # cents: integer arithmetic, no Decimal per line
        for n, (i, sw, q) in enumerate(zip(items, supply, quantities), 1):
            it = item.get(i)
            if it is None:
                break  # the unused item: the order is rolled back below
            s = stock[(sw, i)]
            acc = left.get((sw, i))
            if acc is None:
                acc = left[(sw, i)] = [s[2], 0, 0, 0]  # quantity, ytd, order count, remote count
            acc[0] = acc[0] - q if acc[0] >= q + 10 else acc[0] - q + 91
            acc[1] += q
            acc[2] += 1
            acc[3] += sw != w
            amount = it[5] * q
            total += amount
            _brand = "B" if "ORIGINAL" in it[3] and "ORIGINAL" in s[3] else "G"
            lines.append((n, i, sw, q, amount, s[4]))
        # head and items, stocks, district, order, new order, COMMIT; then the bulk statements
        updates = [(a[0], a[1], a[2], a[3], sw, i) for (sw, i), a in left.items()]
        sent = 6 + await self._many("no_stock_update", updates)
        o_id = (await st["no_district"].execute((w, d))).insert_id - 1
        await st["no_order"].execute((o_id, d, w, c, count, int(all(sw == w for sw in supply))))
        await st["no_new_order"].execute((o_id, d, w))
        sent += await self._many("no_line", [(o_id, d, w, n, i, sw, q, a, dist) for n, i, sw, q, a, dist in lines])
        _total = Decimal(total) / 100 * (1 - head[1]) * (1 + head[4])  # the amount the terminal would display
        if rollback:
            await conn.rollback()
            raise IntendedRollback(sent)
        await conn.commit()
        return sent

    async def _customer_id(self, w: int, d: int, last: str) -> int:
        rows = (await self.st["customer_by_name"].execute((w, d, last))).rows
        return int(rows[(len(rows) - 1) // 2][0])  # position n/2 rounded up, counted from 1

    async def payment(self, conn: asyncmy.Connection) -> int:
        st, w = self.st, self.w
        assert self.k is not None
        d, c_w, c_d, c, last, cents = self.inputs.payment(self.k)
        n = 5
        if last is not None:
            c = await self._customer_id(c_w, c_d, last)
            n += 1
        await st["pay_customer"].execute((cents, cents, d, w, cents, c_w, c_d, c))
        row = (await st["pay_read"].execute((c_w, c_d, c, w, d))).rows[0]
        await st["pay_history"].execute((c, c_d, c_w, d, w, cents, f"{row[15]}    {row[21]}"))
        await st["pay_ytd"].execute((cents, cents, w, d))
        await conn.commit()
        return n

    async def order_status(self, conn: asyncmy.Connection) -> int:
        w = self.w
        assert self.k is not None
        d = self.inputs.district()
        c, last = self.inputs.customer(self.k)
        n = 2
        if last is not None:
            c = await self._customer_id(w, d, last)
            n += 1
        await self.st["os_read"].execute((w, d, c, w, d, c))
        await conn.commit()
        return n

    async def delivery(self, conn: asyncmy.Connection) -> int:
        st, w = self.st, self.w
        carrier = self.inputs.carrier()
        oldest = (await st["dl_oldest"].execute((w,) * DISTRICTS_PER_WAREHOUSE)).rows
        if not oldest:  # every district delivered (2.7.4.2: skipped, and the skip would be logged)
            await conn.commit()
            return 2
        if self.json:
            delivered = json.dumps(oldest)
            sums = (await st["dl_sums"].execute((delivered, w))).rows
            await st["dl_delete"].execute((delivered, w))
            await st["dl_deliver"].execute((delivered, w, carrier))
        else:
            keys: list[int] = []
            for d, o in oldest:
                keys += (d, o)
            keys += keys[:2] * (DISTRICTS_PER_WAREHOUSE - len(oldest))
            sums = (await st["dl_sums"].execute((w, *keys))).rows
            await st["dl_delete"].execute((w, *keys))
            await st["dl_deliver"].execute((carrier, w, *keys))
        sent = 5 + await self._many("dl_customer", [(amount, w, d, c) for d, c, amount in sums])
        await conn.commit()
        return sent

    async def stock_level(self, conn: asyncmy.Connection) -> int:
        await self.st["sl_count"].execute((self.inputs.threshold(), self.w, self.inputs.d_stock_level))
        await conn.commit()
        return 2
