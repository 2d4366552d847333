"""The consistency conditions of TPC-C clause 3.3.2, 1 to 12. All queries of a check read one
consistent snapshot, so the conditions hold, and can be checked, while transactions run. Each is
the specification's relationship as a few set queries over the tables' keys (10 and 12: each
customer's delivered order lines and payments, summed in two passes, never a query per customer),
returning only the rows that break it."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import asyncmy

from bench_dsl.workloads.tpcc.data import FIRST_UNDELIVERED

SHOWN = 5  # violations quoted per condition; the count says how many there are
LOADED_DELIVERED = FIRST_UNDELIVERED - 1  # the orders of a district delivered at load (2100)


@dataclass(frozen=True, slots=True)
class ConsistencyCondition:
    number: int
    text: str
    passed: bool
    checked: int  # warehouses, districts or orders looked at
    violations: int
    details: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"condition": self.number, "text": self.text, "passed": self.passed, "checked": self.checked,
                "violations": self.violations, "details": self.details}


async def _rows(conn: asyncmy.Connection, sql: str) -> list[tuple[Any, ...]]:
    async with conn.cursor() as cur:
        await cur.execute(sql)
        return list(await cur.fetchall())


def _result(number: int, text: str, checked: int, bad: list[str]) -> ConsistencyCondition:
    return ConsistencyCondition(number, text, not bad and checked > 0, checked, len(bad),
                     bad[:SHOWN] if bad else ([] if checked else ["nothing to check: the tables are empty"]))


async def condition_1(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    rows = await _rows(conn, "SELECT w_id, w_ytd, SUM(d_ytd) FROM warehouse JOIN district ON d_w_id = w_id "
                             "GROUP BY w_id, w_ytd")
    bad = [f"warehouse {w}: W_YTD {ytd} but the sum of D_YTD is {s}" for w, ytd, s in rows
           if Decimal(ytd) != Decimal(s)]
    return _result(1, "W_YTD = sum(D_YTD) for each warehouse", len(rows), bad)


async def condition_2(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    rows = await _rows(conn, "SELECT d_w_id, d_id, d_next_o_id - 1, "
                             "(SELECT MAX(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id), "
                             "(SELECT MAX(no_o_id) FROM new_orders WHERE no_w_id = d_w_id AND no_d_id = d_id) "
                             "FROM district")
    # A district whose orders were all delivered has no max(NO_O_ID): only its orders are compared.
    bad = [f"warehouse {w} district {d}: D_NEXT_O_ID - 1 = {n}, max(O_ID) = {o}, max(NO_O_ID) = {no}"
           for w, d, n, o, no in rows if n != o or (no is not None and no != n)]
    return _result(2, "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) for each district", len(rows), bad)


async def condition_3(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    rows = await _rows(conn, "SELECT no_w_id, no_d_id, MAX(no_o_id) - MIN(no_o_id) + 1, COUNT(*) FROM new_orders "
                             "GROUP BY no_w_id, no_d_id")
    bad = [f"warehouse {w} district {d}: max(NO_O_ID) - min(NO_O_ID) + 1 = {span} but {n} NEW-ORDER rows"
           for w, d, span, n in rows if span != n]
    return _result(3, "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER for each district", len(rows), bad)


async def condition_4(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    orders = {(w, d): int(s) for w, d, s in await _rows(
        conn, "SELECT o_w_id, o_d_id, SUM(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id")}
    lines = {(w, d): int(n) for w, d, n in await _rows(
        conn, "SELECT ol_w_id, ol_d_id, COUNT(*) FROM order_line GROUP BY ol_w_id, ol_d_id")}
    keys = sorted(orders.keys() | lines.keys())
    bad = [f"warehouse {w} district {d}: sum(O_OL_CNT) = {orders.get((w, d), 0)} but {lines.get((w, d), 0)} "
           "ORDER-LINE rows" for w, d in keys if orders.get((w, d), 0) != lines.get((w, d), 0)]
    return _result(4, "sum(O_OL_CNT) = rows in ORDER-LINE for each district", len(keys), bad)


async def condition_5(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    rows = await _rows(conn, "SELECT o_w_id, o_d_id, o_id, o_carrier_id, no_o_id IS NOT NULL FROM orders "
                             "LEFT JOIN new_orders ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id "
                             "WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL)")
    (checked,) = (await _rows(conn, "SELECT COUNT(*) FROM orders"))[0]
    bad = [f"order {o} of warehouse {w} district {d}: O_CARRIER_ID {c} "
           f"{'with' if pending else 'without'} a NEW-ORDER row" for w, d, o, c, pending in rows]
    return _result(5, "O_CARRIER_ID is null exactly for the orders in NEW-ORDER", int(checked), bad)


async def condition_6(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    rows = await _rows(conn, "SELECT o_w_id, o_d_id, o_id, o_ol_cnt, COUNT(ol_number) FROM orders "
                             "LEFT JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
                             "GROUP BY o_w_id, o_d_id, o_id, o_ol_cnt HAVING o_ol_cnt <> COUNT(ol_number)")
    (checked,) = (await _rows(conn, "SELECT COUNT(*) FROM orders"))[0]
    bad = [f"order {o} of warehouse {w} district {d}: O_OL_CNT {cnt} but {n} ORDER-LINE rows"
           for w, d, o, cnt, n in rows]
    return _result(6, "O_OL_CNT = its ORDER-LINE rows for each order", int(checked), bad)


async def condition_7(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    rows = await _rows(conn, "SELECT o_w_id, o_d_id, o_id, ol_number, o_carrier_id, ol_delivery_d FROM orders "
                             "JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
                             "WHERE (o_carrier_id IS NULL) <> (ol_delivery_d IS NULL)")
    (checked,) = (await _rows(conn, "SELECT COUNT(*) FROM orders"))[0]
    bad = [f"order {o} line {n} of warehouse {w} district {d}: O_CARRIER_ID {c}, OL_DELIVERY_D {dd}"
           for w, d, o, n, c, dd in rows]
    return _result(7, "OL_DELIVERY_D is null exactly when O_CARRIER_ID is", int(checked), bad)


async def condition_8(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    rows = await _rows(conn, "SELECT w_id, w_ytd, (SELECT SUM(h_amount) FROM history WHERE h_w_id = w_id) "
                             "FROM warehouse")
    bad = [f"warehouse {w}: W_YTD {ytd} but the sum of H_AMOUNT is {s}" for w, ytd, s in rows
           if s is None or Decimal(ytd) != Decimal(s)]
    return _result(8, "W_YTD = sum(H_AMOUNT) for each warehouse", len(rows), bad)


async def condition_9(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    sums = {(w, d): Decimal(s) for w, d, s in await _rows(
        conn, "SELECT h_w_id, h_d_id, SUM(h_amount) FROM history GROUP BY h_w_id, h_d_id")}
    rows = await _rows(conn, "SELECT d_w_id, d_id, d_ytd FROM district")
    bad = [f"warehouse {w} district {d}: D_YTD {ytd} but the sum of H_AMOUNT is {sums.get((w, d))}"
           for w, d, ytd in rows if sums.get((w, d)) != Decimal(ytd)]
    return _result(9, "D_YTD = sum(H_AMOUNT) for each district", len(rows), bad)


# Each customer's delivered order lines, summed (OL_AMOUNT selected by (OL_W_ID, OL_D_ID, OL_O_ID) =
# (O_W_ID, O_D_ID, O_ID), (O_W_ID, O_D_ID, O_C_ID) = (C_W_ID, C_D_ID, C_ID) and OL_DELIVERY_D not
# null), joined to the customers by their key. One level of grouping: MariaDB may read it customer by
# customer (its split materialization: a customer's orders by idx_orders, their lines by the key),
# which an inner grouped table would turn into a whole pass over the order lines for each customer
# (a check that never ended once the orders had moved on from their load)
DELIVERED = ("LEFT JOIN (SELECT o_w_id, o_d_id, o_c_id, SUM(ol_amount) AS amount FROM orders "
             "JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id "
             "WHERE ol_delivery_d IS NOT NULL "
             "GROUP BY o_w_id, o_d_id, o_c_id) ol ON ol.o_w_id = c_w_id AND ol.o_d_id = c_d_id AND ol.o_c_id = c_id ")
# ... and each customer's payments (H_AMOUNT selected by (H_C_W_ID, H_C_D_ID, H_C_ID) = (C_W_ID, C_D_ID, C_ID))
PAID = ("LEFT JOIN (SELECT h_c_w_id, h_c_d_id, h_c_id, SUM(h_amount) AS amount FROM history "
        "GROUP BY h_c_w_id, h_c_d_id, h_c_id) h ON h.h_c_w_id = c_w_id AND h.h_c_d_id = c_d_id AND h.h_c_id = c_id ")


class Snapshot:
    """A check's connection, inside its one consistent snapshot, with what its conditions share: the
    customers that break condition 10 or 12 and how many there are, read once for both (the passes
    over the order lines are the check's costliest: seconds on 10 warehouses)."""

    def __init__(self, conn: asyncmy.Connection) -> None:
        self.conn = conn
        self.customers: tuple[int, list[tuple[Any, ...]]] | None = None


async def _customers(snap: Snapshot) -> tuple[int, list[tuple[Any, ...]]]:
    if snap.customers is None:
        conn = snap.conn
        (n,) = (await _rows(conn, "SELECT COUNT(*) FROM customer"))[0]
        rows = await _rows(conn, "SELECT c_w_id, c_d_id, c_id, c_balance, c_ytd_payment, COALESCE(ol.amount, 0), "
                                 f"COALESCE(h.amount, 0) FROM customer {DELIVERED}{PAID}"
                                 "WHERE c_balance <> COALESCE(ol.amount, 0) - COALESCE(h.amount, 0) "
                                 "OR c_balance + c_ytd_payment <> COALESCE(ol.amount, 0) "
                                 "ORDER BY c_w_id, c_d_id, c_id")
        snap.customers = int(n), rows
    return snap.customers


async def condition_10(snap: Snapshot) -> ConsistencyCondition:
    n, rows = await _customers(snap)
    bad = [f"customer {c} of warehouse {w} district {d}: C_BALANCE {b} but its delivered OL_AMOUNT {ol} less its "
           f"H_AMOUNT {h} is {Decimal(ol) - Decimal(h)}" for w, d, c, b, _, ol, h in rows
           if Decimal(b) != Decimal(ol) - Decimal(h)]
    return _result(10, "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT) for each customer", n, bad)


async def condition_11(snap: Snapshot) -> ConsistencyCondition:
    conn = snap.conn
    """count(ORDER) - count(NEW-ORDER) = 2100 for each district: a relationship of the initial
    population, which every Delivery moves on by one (its NEW-ORDER row goes, its ORDER stays).
    Judged in each district no Delivery has reached since the load (at most the loaded 2100
    delivered orders); the others are said, and held to condition 5 instead."""
    rows = await _rows(conn, "SELECT d_w_id, d_id, "
                             "(SELECT COUNT(*) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id), "
                             "(SELECT COUNT(*) FROM new_orders WHERE no_w_id = d_w_id AND no_d_id = d_id), "
                             "(SELECT COUNT(*) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id "
                             "AND o_carrier_id IS NOT NULL) FROM district ORDER BY d_w_id, d_id")
    initial = [(w, d, o, no) for w, d, o, no, delivered in rows if delivered <= LOADED_DELIVERED]
    bad = [f"warehouse {w} district {d}: {o} ORDER rows less {no} NEW-ORDER rows is {o - no}, not "
           f"{LOADED_DELIVERED}" for w, d, o, no in initial if o - no != LOADED_DELIVERED]
    text = f"count(ORDER) - count(NEW-ORDER) = {LOADED_DELIVERED} for each district (of the initial population)"
    if rows and not initial:  # every district has had deliveries: the relationship no longer applies anywhere
        since = sum(delivered - LOADED_DELIVERED for *_, delivered in rows)
        return ConsistencyCondition(11, text, True, 0, 0, [
            f"holds for the initial population only: {since} orders were delivered since the load, in every "
            f"district (condition 5 holds each order to its NEW-ORDER row instead)"])
    return _result(11, text, len(initial), bad)


async def condition_12(snap: Snapshot) -> ConsistencyCondition:
    n, rows = await _customers(snap)
    bad = [f"customer {c} of warehouse {w} district {d}: C_BALANCE {b} + C_YTD_PAYMENT {y} = {Decimal(b) + Decimal(y)} "
           f"but its delivered OL_AMOUNT is {ol}" for w, d, c, b, y, ol, _ in rows
           if Decimal(b) + Decimal(y) != Decimal(ol)]
    return _result(12, "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT) for each customer", n, bad)


CONDITIONS = (condition_1, condition_2, condition_3, condition_4, condition_5, condition_6, condition_7,
              condition_8, condition_9, condition_10, condition_11, condition_12)


async def check_consistency(conn: asyncmy.Connection,
                            numbers: tuple[int, ...] | None = None) -> list[ConsistencyCondition]:
    """Run the conditions (all of 1 to 12, or those numbered) in one consistent snapshot."""
    chosen = [c for i, c in enumerate(CONDITIONS, 1) if numbers is None or i in numbers]
    async with conn.cursor() as cur:
        # One snapshot for every query, so that the conditions compare the same state.
        await cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
    try:
        snap = Snapshot(conn)
        return [await c(snap) for c in chosen]
    finally:
        await conn.rollback()
