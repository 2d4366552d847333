"""The TPC-C rules that the load and the run share: table cardinalities (clause 4.3.3.1), customer
last names (4.3.2.3), NURand and its C constants (2.1.6)."""

from __future__ import annotations

import random
from dataclasses import dataclass

ITEMS = 100_000
DISTRICTS_PER_WAREHOUSE = 10
CUSTOMERS_PER_DISTRICT = 3_000
ORDERS_PER_DISTRICT = 3_000
FIRST_UNDELIVERED = 2_101  # orders 2101..3000 of each district are new (undelivered) at load
STOCK_PER_WAREHOUSE = ITEMS
# Clause 2.4.1.4: 1% of new orders name an unused item and are rolled back (nopm leaves them out).
NEW_ORDER_ROLLBACK = 0.01
# The terminals' other input rules, for both ways of running them (session.Inputs in Python, the C
# executor's tpcc draws): 1% of order lines supplied by another warehouse (2.4.1.5); 15% of payments
# by a customer of another warehouse (2.5.1.2); 60% of customers named by last name (2.5.1.2,
# 2.6.1.2); payments of 1.00 to 5,000.00 (in cents); carriers 1 to 10 (2.7.1.2); Stock-Level's
# threshold 10 to 20 (2.8.1.2). An order's 5 to 15 lines of 1 to 10 each are the C draw's own too.
REMOTE_LINE = 0.01
REMOTE_PAYMENT = 0.15
BY_LAST_NAME = 0.6
PAYMENT_CENTS = (100, 500_000)
CARRIERS = 10
STOCK_THRESHOLD = (10, 20)

# Clause 4.3.2.3: a customer's last name is three syllables chosen by the digits of a number 0..999.
SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")
LAST_NAMES: tuple[str, ...] = tuple(SYLLABLES[n // 100] + SYLLABLES[n // 10 % 10] + SYLLABLES[n % 10]
                                    for n in range(1000))

# NURand's A per field (clause 2.1.6).
A_C_LAST = 255
A_C_ID = 1023
A_OL_I_ID = 8191


def last_name(n: int) -> str:
    return LAST_NAMES[n]


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    """NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x."""
    rnd = rng.random
    return (((int(rnd() * (a + 1)) | (x + int(rnd() * (y - x + 1)))) + c) % (y - x + 1)) + x


def c_last_delta_ok(c_load: int, c_run: int) -> bool:
    """Clause 2.1.6.1: |C_RUN - C_LOAD| for C_LAST lies in 65..119 and is neither 96 nor 112, so the
    names looked up at run time are not the load's most frequent ones."""
    delta = abs(c_run - c_load)
    return 65 <= delta <= 119 and delta not in (96, 112)


@dataclass(frozen=True, slots=True)
class RunConstants:
    """The C of NURand for each field, the same for every terminal of a run (clause 2.1.6)."""

    c_last: int
    c_id: int
    ol_i_id: int


def run_constants(c_load: int, rng: random.Random) -> RunConstants:
    allowed = [c for c in range(A_C_LAST + 1) if c_last_delta_ok(c_load, c)]
    return RunConstants(rng.choice(allowed), rng.randint(0, A_C_ID), rng.randint(0, A_OL_I_ID))


def load_constant(seed: int) -> int:
    """C_LOAD for C_LAST, chosen once per load and stored with the data."""
    return random.Random(seed * 31 + 7).randint(0, A_C_LAST)


def rows_per_warehouse() -> int:
    per_district = CUSTOMERS_PER_DISTRICT * 2 + ORDERS_PER_DISTRICT * 11 + (ORDERS_PER_DISTRICT - FIRST_UNDELIVERED + 1)
    return 1 + DISTRICTS_PER_WAREHOUSE * (1 + per_district) + STOCK_PER_WAREHOUSE


def total_rows(warehouses: int) -> int:
    """Rows a load writes, counting order lines at their expected 10 per order."""
    return ITEMS + warehouses * rows_per_warehouse()
