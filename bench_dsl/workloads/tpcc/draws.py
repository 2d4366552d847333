"""A TPC-C terminal's inputs as the C executor draws them (bench_dsl/language/statements.py's
draws; native/src/tpcc.c), the same in both modes' descriptions (procs.statements and
client_sql.statements), by the rules of data.py that session.Inputs follows on asyncmy. The
values a step reads by index follow the order these are given in."""

from __future__ import annotations

from bench_dsl.language.statements import Draw
from bench_dsl.workloads.tpcc import data
from bench_dsl.workloads.tpcc.data import RunConstants

HOME = Draw("user", (0,))  # the terminal's warehouse (Session.values)
STOCK_LEVEL_DISTRICT = Draw("user", (1,))  # its own district for Stock-Level (clause 2.8.1.1)
DISTRICT = Draw("uniform", (1, data.DISTRICTS_PER_WAREHOUSE))
CARRIER = Draw("uniform", (1, data.CARRIERS))
THRESHOLD = Draw("uniform", data.STOCK_THRESHOLD)
CENTS = Draw("uniform", data.PAYMENT_CENTS)
CAPTURED = Draw("captured")  # a value a statement reads back


def customer_id(k: RunConstants) -> Draw:
    return Draw("nurand", (data.A_C_ID, 1, data.CUSTOMERS_PER_DISTRICT, k.c_id))


def customer(k: RunConstants) -> Draw:
    """Two values: the customer's id and last name (0 and the name, or the id and None)."""
    return Draw("tpcc_customer", (data.BY_LAST_NAME, data.A_C_LAST, k.c_last, data.A_C_ID, k.c_id,
                                  data.CUSTOMERS_PER_DISTRICT, *data.SYLLABLES))


def order_lines(k: RunConstants, warehouses: int, home: int = 0) -> Draw:
    """Four values: the lines as JSON, their count, whether all are local, whether a stock row comes
    twice. `home`: the index of the step's home warehouse value."""
    return Draw("tpcc_order", (home, warehouses, data.A_OL_I_ID, k.ol_i_id, data.ITEMS, data.NEW_ORDER_ROLLBACK,
                               data.REMOTE_LINE))


def payment_customer_place(warehouses: int, home: int = 0, district: int = 1) -> Draw:
    """Two values: the customer's warehouse and district (another warehouse's for 15% of payments)."""
    return Draw("tpcc_remote", (home, district, warehouses, data.DISTRICTS_PER_WAREHOUSE, data.REMOTE_PAYMENT))
