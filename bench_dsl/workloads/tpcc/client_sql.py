"""TPC-C's client-side SQL (`procedures = off`) as the C executor runs it: the statements of
session.py's terminals where the server has JSON_TABLE, an order's lines given as one JSON value,
and what one statement reads back carried into the next (the order id from the district's
LAST_INSERT_ID, the customer found by last name, the oldest undelivered orders and their sums),
all of it a description (bench_dsl/language/statements.py) that the C core executes.

Against session.py's terminals on asyncmy, the arithmetic on an order's stock rows and lines is
the server's (the same rule: a stock row named by several lines of one order loses their sum, and
wraps by 91 once, which is what line by line gives unless one order names a row 9 times or more);
the round trips are the same. A server without JSON_TABLE cannot prepare these: its terminals run
on asyncmy with row IN lists instead (bench_dsl/fleet/users.py)."""

from __future__ import annotations

from bench_dsl.language.statements import Capture, Draw, Execute, Pause, StatementStep, Transaction, Transactions
from bench_dsl.workloads.tpcc import draws as terminal
from bench_dsl.workloads.tpcc.data import DISTRICTS_PER_WAREHOUSE, RunConstants
from bench_dsl.workloads.tpcc.session import SQL, SQL_JSON

# an order's lines, as the tpcc_order draw gives them: [[item, supplying warehouse, quantity], ...]
_LINES = "JSON_TABLE(?, '$[*]' COLUMNS (i INT PATH '$[0]', w INT PATH '$[1]', q INT PATH '$[2]')) l"
_LINES_N = ("JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, i INT PATH '$[0]', w INT PATH '$[1]', "
            "q INT PATH '$[2]')) l")
_DISTS = ", ".join(f"s_dist_{d:02}" for d in range(1, DISTRICTS_PER_WAREHOUSE + 1))

NEW_ORDER = (
    # the head row (i_id 0), then a row per line whose item exists: fewer than the lines and one,
    # and the order named the unused item
    SQL["no_head_items"].split(" UNION ALL ")[0] + " UNION ALL SELECT i_id, i_price, i_name, i_data, NULL, "
    f"CAST(i_price * 100 AS UNSIGNED) FROM {_LINES} JOIN item ON i_id = l.i",
    f"SELECT s_w_id, s_i_id, s_quantity, s_data, ELT(?, {_DISTS}) FROM {_LINES} "
    "JOIN stock ON s_w_id = l.w AND s_i_id = l.i FOR UPDATE",
    f"UPDATE stock JOIN (SELECT i, w, SUM(q) AS q, COUNT(*) AS n FROM {_LINES} GROUP BY i, w) x "
    "ON s_w_id = x.w AND s_i_id = x.i SET s_quantity = IF(s_quantity >= x.q + 10, s_quantity - x.q, "
    "s_quantity - x.q + 91), s_ytd = s_ytd + x.q, s_order_cnt = s_order_cnt + x.n, "
    "s_remote_cnt = s_remote_cnt + IF(x.w <> ?, x.n, 0)",
    SQL["no_district"],
    SQL["no_order"],
    SQL["no_new_order"],
    "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, "
    f"ol_amount, ol_dist_info) SELECT ?, ?, ?, l.n, l.i, l.w, l.q, l.q * i_price, ELT(?, {_DISTS}) FROM {_LINES_N} "
    "JOIN item ON i_id = l.i JOIN stock ON s_w_id = l.w AND s_i_id = l.i",
)

# h_data from the names the terminal read (pay_read): an INSERT ... SELECT of them would share-lock
# the warehouse and district rows that every payment then updates, a deadlock between two payments
PAYMENT_HISTORY = ("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
                   "VALUES (?, ?, ?, ?, ?, NOW(), ? / 100, CONCAT(?, '    ', ?))")

DELIVERY_CUSTOMERS = ("UPDATE customer JOIN JSON_TABLE(?, '$[*]' COLUMNS (d INT PATH '$[0]', c INT PATH '$[1]', "
                      "amount DECIMAL(12,2) PATH '$[2]')) x ON c_w_id = ? AND c_d_id = x.d AND c_id = x.c "
                      "SET c_balance = c_balance + x.amount, c_delivery_cnt = c_delivery_cnt + 1")


def _step(draws: tuple[Draw, ...], *executes: Execute) -> tuple[StatementStep]:
    return (StatementStep(1, 1, draws, executes),)


def statements(constants: RunConstants, warehouses: int, names: tuple[str, ...],
               pauses: tuple[Pause, ...]) -> Transactions:
    """The five transactions, each its statements then COMMIT on a session whose autocommit is off
    (no BEGIN round trip, as session.py's). A user's values are its home warehouse and its
    Stock-Level district."""
    k = constants

    def by_name(w: int, d: int, c: int, last: int) -> Execute:
        """The customer named by last name: the middle one by first name (2.5.2.2), into value c."""
        return Execute((SQL["customer_by_name"],), ((w, 0), (d, 0), (last, 0)), captures=(Capture(c, "middle"),),
                       when=last)

    def ex(sql: str, *values: int | tuple[int, int], captures: tuple[Capture, ...] = (),
           when: int | None = None) -> Execute:
        """`sql` with the step's values (an index, or an index and what is added to it)."""
        return Execute((sql,), tuple(v if isinstance(v, tuple) else (v, 0) for v in values), captures=captures,
                       when=when)

    # New-Order's values: w 0, d 1, c 2, lines 3, count 4, all local 5, repeats 6, item rows 7, next order 8
    head, stock, stock_update, next_order, order, new_order, lines = NEW_ORDER
    o_id = (8, -1)
    new_order_tx = Transaction(_step(
        (terminal.HOME, terminal.DISTRICT, terminal.customer_id(k), terminal.order_lines(k, warehouses),
         terminal.CAPTURED, terminal.CAPTURED),
        ex(head, 0, 1, 2, 3, captures=(Capture(7, "rows"),)), ex(stock, 1, 3), ex(stock_update, 3, 0),
        ex(next_order, 0, 1, captures=(Capture(8, "insert_id"),)), ex(order, o_id, 1, 0, 2, 4, 5),
        ex(new_order, o_id, 1, 0), ex(lines, o_id, 1, 0, 1, 3)),
        explicit=True, keep=(7, 4, 1))  # the head row and one per line: else the unused item (2.4.1.4)
    # Payment's: w 0, d 1, c_w 2, c_d 3, c 4, last 5, cents 6, the warehouse's and district's names 7, 8
    payment_tx = Transaction(_step(
        (terminal.HOME, terminal.DISTRICT, terminal.payment_customer_place(warehouses), terminal.customer(k),
         terminal.CENTS, terminal.CAPTURED, terminal.CAPTURED),
        by_name(2, 3, 4, 5), ex(SQL["pay_customer"], 6, 6, 1, 0, 6, 2, 3, 4),
        ex(SQL["pay_read"], 2, 3, 4, 0, 1, captures=(Capture(7, "first_text", 15), Capture(8, "first_text", 21))),
        ex(PAYMENT_HISTORY, 4, 3, 2, 1, 0, 6, 7, 8), ex(SQL["pay_ytd"], 6, 6, 0, 1)), explicit=True)
    # Order-Status's: w 0, d 1, c 2, last 3
    order_status_tx = Transaction(_step(
        (terminal.HOME, terminal.DISTRICT, terminal.customer(k)), by_name(0, 1, 2, 3),
        ex(SQL["os_read"], 0, 1, 2, 0, 1, 2)), explicit=True)
    # Delivery's: w 0, carrier 1, the oldest undelivered orders 2, their sums by customer 3
    delivery_tx = Transaction(_step(
        (terminal.HOME, terminal.CARRIER, terminal.CAPTURED, terminal.CAPTURED),
        ex(SQL["dl_oldest"], *(0,) * DISTRICTS_PER_WAREHOUSE, captures=(Capture(2, "rows_json"),)),
        ex(SQL_JSON["dl_sums"], 2, 0, captures=(Capture(3, "rows_json"),), when=2),
        ex(SQL_JSON["dl_delete"], 2, 0, when=2), ex(SQL_JSON["dl_deliver"], 2, 0, 1, when=2),
        ex(DELIVERY_CUSTOMERS, 3, 0, when=3)), explicit=True)
    # Stock-Level's: w 0, its district 1, threshold 2
    stock_level_tx = Transaction(_step((terminal.HOME, terminal.STOCK_LEVEL_DISTRICT, terminal.THRESHOLD),
                                       ex(SQL["sl_count"], 2, 0, 1)), explicit=True)
    by_name_tx = {"new_order": new_order_tx, "payment": payment_tx, "order_status": order_status_tx,
                  "delivery": delivery_tx, "stock_level": stock_level_tx}
    return Transactions(tuple(by_name_tx[n] for n in names), pauses, autocommit=False)
