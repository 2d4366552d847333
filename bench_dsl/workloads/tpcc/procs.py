"""`procedures = on`: the five TPC-C transactions as stored procedures, one CALL (one round trip)
per transaction, as HammerDB runs TPC-C on MySQL. The client still draws every input (NURand with
the run's constants, remote lines, the 1% unused item), so both modes run the same workload."""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import TYPE_CHECKING, Any

import asyncmy

from bench_dsl.core.errors import TargetError
from bench_dsl.language.statements import Draw, Execute, Pause, StatementStep, Transaction, Transactions
from bench_dsl.workloads.base import IntendedRollback, Session, rollback_quietly
from bench_dsl.workloads.tpcc import draws as terminal
from bench_dsl.workloads.tpcc.data import RunConstants
from bench_dsl.workloads.tpcc.session import Inputs

if TYPE_CHECKING:
    from bench_dsl.workloads.tpcc.workload import Tpcc

_DISTS = "s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10"

_LINES = "JSON_TABLE(p_lines, '$[*]' COLUMNS (i INT PATH '$[0]', sw INT PATH '$[1]', q INT PATH '$[2]')) l"
_LINES_N = ("JSON_TABLE(p_lines, '$[*]' COLUMNS (n FOR ORDINALITY, i INT PATH '$[0]', sw INT PATH '$[1]', "
            "q INT PATH '$[2]')) l")

_KEYS = "JSON_TABLE(v_keys, '$[*]' COLUMNS (d INT PATH '$[0]', o INT PATH '$[1]')) k"

# Any error ends the transaction before it reaches the client, which then retries deadlocks.
_ON_ERROR = "DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"

# The customer named by last name is the middle one by first name (clause 2.5.2.2).
_BY_NAME = """
  IF p_last IS NOT NULL THEN
    SELECT COUNT(*) INTO v_n FROM customer WHERE c_w_id = {w} AND c_d_id = {d} AND c_last = p_last;
    SET v_n = (v_n - 1) DIV 2;
    SELECT c_id INTO v_c FROM customer WHERE c_w_id = {w} AND c_d_id = {d} AND c_last = p_last
      ORDER BY c_first LIMIT v_n, 1;
  END IF;"""

PROCEDURES: dict[str, str] = {
    # The order's lines come as JSON, [[item, supplying warehouse, quantity], ...], sorted by stock key
    # so that concurrent orders lock stock rows in one order. Set-based, like the client-side mode:
    # one UPDATE for all stock rows, one INSERT for all lines, the district locked last. An order
    # that names a stock row twice takes the loop (each line must see what the previous one left).
    "tpcc_new_order": f"""CREATE PROCEDURE tpcc_new_order(p_w INT, p_d INT, p_c INT, p_count INT, p_all_local INT,
    p_lines VARCHAR(400), p_repeats INT)
BEGIN
  DECLARE v_discount DECIMAL(4,4);
  DECLARE v_last VARCHAR(16);
  DECLARE v_credit CHAR(2);
  DECLARE v_w_tax, v_d_tax DECIMAL(4,4);
  DECLARE v_o, v_i, v_sw, v_q, v_sq INT;
  DECLARE v_n INT DEFAULT 1;
  DECLARE v_price DECIMAL(5,2);
  DECLARE v_i_data VARCHAR(50);
  DECLARE v_total DECIMAL(12,2) DEFAULT 0;
  DECLARE v_missing INT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_missing = 1;
  {_ON_ERROR}
  START TRANSACTION;
  SELECT c_discount, c_last, c_credit, w_tax, d_tax INTO v_discount, v_last, v_credit, v_w_tax, v_d_tax
    FROM customer, warehouse, district WHERE w_id = p_w AND d_w_id = w_id AND d_id = p_d
    AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
  IF p_repeats = 0 THEN
    UPDATE stock JOIN {_LINES} ON s_w_id = l.sw AND s_i_id = l.i
      SET s_quantity = IF(s_quantity >= l.q + 10, s_quantity - l.q, s_quantity - l.q + 91), s_ytd = s_ytd + l.q,
      s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + (l.sw <> p_w);
  ELSE
    each_line: WHILE v_n <= p_count DO
      SET v_i = JSON_VALUE(p_lines, CONCAT('$[', v_n - 1, '][0]')),
          v_sw = JSON_VALUE(p_lines, CONCAT('$[', v_n - 1, '][1]')),
          v_q = JSON_VALUE(p_lines, CONCAT('$[', v_n - 1, '][2]'));
      SELECT i_price, i_data INTO v_price, v_i_data FROM item WHERE i_id = v_i;
      IF v_missing THEN
        LEAVE each_line;  -- the unused item of 1% of orders: rolled back below
      END IF;
      SELECT s_quantity INTO v_sq FROM stock WHERE s_w_id = v_sw AND s_i_id = v_i FOR UPDATE;
      UPDATE stock SET s_quantity = IF(v_sq >= v_q + 10, v_sq - v_q, v_sq - v_q + 91), s_ytd = s_ytd + v_q,
        s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + (v_sw <> p_w)
        WHERE s_w_id = v_sw AND s_i_id = v_i;
      SET v_n = v_n + 1;
    END WHILE;
  END IF;
  UPDATE district SET d_next_o_id = LAST_INSERT_ID(d_next_o_id + 1) WHERE d_w_id = p_w AND d_id = p_d;
  SET v_o = LAST_INSERT_ID() - 1;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local)
    VALUES (v_o, p_d, p_w, p_c, NOW(), p_count, p_all_local);
  INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES (v_o, p_d, p_w);
  INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount,
    ol_dist_info)
    SELECT v_o, p_d, p_w, l.n, l.i, l.sw, l.q, l.q * i_price, ELT(p_d, {_DISTS})
    FROM {_LINES_N} JOIN item ON i_id = l.i JOIN stock ON s_w_id = l.sw AND s_i_id = l.i;
  IF ROW_COUNT() < p_count THEN
    SET v_missing = 1;  -- a line without its item: the unused item of 1% of orders
  END IF;
  SELECT SUM(ol_amount) INTO v_total FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o;
  IF v_missing THEN
    ROLLBACK;
  ELSE
    COMMIT;
  END IF;
  SELECT 1 - v_missing, v_o, v_total * (1 - v_discount) * (1 + v_w_tax + v_d_tax);
END""",
    "tpcc_payment": f"""CREATE PROCEDURE tpcc_payment(p_w INT, p_d INT, p_c_w INT, p_c_d INT, p_c INT,
    p_last VARCHAR(16), p_cents INT)
BEGIN
  DECLARE v_c INT DEFAULT p_c;
  DECLARE v_n INT;
  DECLARE v_first, v_last VARCHAR(16);
  DECLARE v_middle, v_state, v_credit CHAR(2);
  DECLARE v_street_1, v_street_2, v_city VARCHAR(20);
  DECLARE v_zip CHAR(9);
  DECLARE v_phone CHAR(16);
  DECLARE v_since DATETIME;
  DECLARE v_credit_lim, v_balance DECIMAL(12,2);
  DECLARE v_discount DECIMAL(4,4);
  DECLARE v_data VARCHAR(200);
  DECLARE v_w_name, v_d_name VARCHAR(10);
  DECLARE v_w_street_1, v_w_street_2, v_w_city, v_d_street_1, v_d_street_2, v_d_city VARCHAR(20);
  DECLARE v_w_state, v_d_state CHAR(2);
  DECLARE v_w_zip, v_d_zip CHAR(9);
  {_ON_ERROR}
  START TRANSACTION;
  {_BY_NAME.format(w="p_c_w", d="p_c_d")}
  UPDATE customer SET c_balance = c_balance - p_cents / 100, c_ytd_payment = c_ytd_payment + p_cents / 100,
    c_payment_cnt = c_payment_cnt + 1,
    c_data = IF(c_credit = 'BC', LEFT(CONCAT_WS(' ', c_id, c_d_id, c_w_id, p_d, p_w, p_cents / 100, '|', c_data), 500),
                c_data)
    WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit,
    c_credit_lim, c_discount, c_balance, IF(c_credit = 'BC', LEFT(c_data, 200), NULL),
    w_name, w_street_1, w_street_2, w_city, w_state, w_zip, d_name, d_street_1, d_street_2, d_city, d_state, d_zip
    INTO v_first, v_middle, v_last, v_street_1, v_street_2, v_city, v_state, v_zip, v_phone, v_since, v_credit,
    v_credit_lim, v_discount, v_balance, v_data, v_w_name, v_w_street_1, v_w_street_2, v_w_city, v_w_state, v_w_zip,
    v_d_name, v_d_street_1, v_d_street_2, v_d_city, v_d_state, v_d_zip
    FROM customer, warehouse JOIN district ON d_w_id = w_id
    WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c AND w_id = p_w AND d_id = p_d;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c, p_c_d, p_c_w, p_d, p_w, NOW(), p_cents / 100, CONCAT(v_w_name, '    ', v_d_name));
  UPDATE warehouse JOIN district ON d_w_id = w_id SET w_ytd = w_ytd + p_cents / 100, d_ytd = d_ytd + p_cents / 100
    WHERE w_id = p_w AND d_id = p_d;
  COMMIT;
END""",
    "tpcc_order_status": f"""CREATE PROCEDURE tpcc_order_status(p_w INT, p_d INT, p_c INT, p_last VARCHAR(16))
BEGIN
  DECLARE v_c INT DEFAULT p_c;
  DECLARE v_n, v_o, v_carrier INT;
  DECLARE v_balance DECIMAL(12,2);
  DECLARE v_first, v_last VARCHAR(16);
  DECLARE v_middle CHAR(2);
  DECLARE v_entry DATETIME;
  {_ON_ERROR}
  START TRANSACTION;
  {_BY_NAME.format(w="p_w", d="p_d")}
  SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last
    FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
  SELECT o_id, o_entry_d, o_carrier_id INTO v_o, v_entry, v_carrier
    FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
  SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
    FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o;
  COMMIT;
END""",
    # The oldest undelivered order of each district is locked district by district (clause 2.7.4.2
    # skips a district without one); the rest is set-based over their keys, as JSON.
    "tpcc_delivery": f"""CREATE PROCEDURE tpcc_delivery(p_w INT, p_carrier INT)
BEGIN
  DECLARE v_d INT DEFAULT 1;
  DECLARE v_o INT;
  DECLARE v_keys VARCHAR(400) DEFAULT '';
  DECLARE v_none INT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_none = 1;
  {_ON_ERROR}
  START TRANSACTION;
  WHILE v_d <= 10 DO
    SET v_none = 0;
    SELECT no_o_id INTO v_o FROM new_orders WHERE no_w_id = p_w AND no_d_id = v_d
      ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    IF NOT v_none THEN
      SET v_keys = CONCAT(v_keys, IF(v_keys = '', '', ','), '[', v_d, ',', v_o, ']');
    END IF;
    SET v_d = v_d + 1;
  END WHILE;
  IF v_keys <> '' THEN
    SET v_keys = CONCAT('[', v_keys, ']');
    DELETE new_orders FROM {_KEYS} JOIN new_orders ON no_w_id = p_w AND no_d_id = k.d AND no_o_id = k.o;
    UPDATE {_KEYS} JOIN orders ON o_w_id = p_w AND o_d_id = k.d AND o_id = k.o
      JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id
      SET o_carrier_id = p_carrier, ol_delivery_d = NOW();
    UPDATE (SELECT o_d_id, o_c_id, SUM(ol_amount) AS amount FROM {_KEYS}
            JOIN orders ON o_w_id = p_w AND o_d_id = k.d AND o_id = k.o
            JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id
            GROUP BY o_d_id, o_c_id) x
      JOIN customer ON c_w_id = p_w AND c_d_id = x.o_d_id AND c_id = x.o_c_id
      SET c_balance = c_balance + x.amount, c_delivery_cnt = c_delivery_cnt + 1;
  END IF;
  COMMIT;
END""",
    "tpcc_stock_level": f"""CREATE PROCEDURE tpcc_stock_level(p_w INT, p_d INT, p_threshold INT)
BEGIN
  DECLARE v_next, v_count INT;
  {_ON_ERROR}
  START TRANSACTION;
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SELECT COUNT(DISTINCT s_i_id) INTO v_count FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id
    WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id >= v_next - 20 AND ol_o_id < v_next
    AND s_quantity < p_threshold;
  COMMIT;
  SELECT v_count;
END""",
}

PRIVILEGE_ERRORS = {1044, 1142, 1227, 1370}

CALLS = {
    "new_order": "CALL tpcc_new_order(?, ?, ?, ?, ?, ?, ?)",
    "payment": "CALL tpcc_payment(?, ?, ?, ?, ?, ?, ?)",
    "order_status": "CALL tpcc_order_status(?, ?, ?, ?)",
    "delivery": "CALL tpcc_delivery(?, ?)",
    "stock_level": "CALL tpcc_stock_level(?, ?, ?)",
}

def statements(constants: RunConstants, warehouses: int, names: tuple[str, ...],
               pauses: tuple[Pause, ...]) -> Transactions:
    """The five CALLs as the C executor runs them: the inputs ProcedureSession draws in Python, drawn
    by the executor itself (tpcc/draws.py), and New-Order's answer read for its rollback. A user's
    values are its home warehouse and its Stock-Level district."""
    k = constants
    # each: its draws, and the step's values (the draws' in order, tpcc_order's four and the others'
    # two each) in the order of the CALL's arguments
    calls: dict[str, tuple[tuple[Draw, ...], tuple[int, ...]]] = {
        # w, d, c, then lines, count, all local, repeats
        "new_order": ((terminal.HOME, terminal.DISTRICT, terminal.customer_id(k), terminal.order_lines(k, warehouses)),
                      (0, 1, 2, 4, 5, 3, 6)),
        # w, d, then c_w, c_d, then c, last, then cents
        "payment": ((terminal.HOME, terminal.DISTRICT, terminal.payment_customer_place(warehouses),
                     terminal.customer(k), terminal.CENTS), (0, 1, 2, 3, 4, 5, 6)),
        "order_status": ((terminal.HOME, terminal.DISTRICT, terminal.customer(k)), (0, 1, 2, 3)),
        "delivery": ((terminal.HOME, terminal.CARRIER), (0, 1)),
        "stock_level": ((terminal.HOME, terminal.STOCK_LEVEL_DISTRICT, terminal.THRESHOLD), (0, 1, 2)),
    }
    out = []
    for name in names:
        draws, values = calls[name]
        call = Execute((CALLS[name],), tuple((v, 0) for v in values), outcome=name == "new_order")
        out.append(Transaction((StatementStep(1, 1, draws, (call,)),), explicit=False))
    return Transactions(tuple(out), pauses)


# Each procedure carries the version of the whole set in its comment: a set from another version
# of bench-dsl is replaced, a current one left alone (workers must not drop what others call).
VERSION = hashlib.sha256("\n".join(PROCEDURES.values()).encode()).hexdigest()[:16]
COMMENT = f"bench-dsl tpcc {VERSION}"


async def installed(conn: asyncmy.Connection) -> bool:
    async with conn.cursor() as cur:
        await cur.execute("SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() "
                          "AND ROUTINE_TYPE = 'PROCEDURE' AND ROUTINE_COMMENT = %s AND ROUTINE_NAME IN "
                          f"({', '.join(['%s'] * len(PROCEDURES))})", (COMMENT, *PROCEDURES))
        (n,) = await cur.fetchone()
    return int(n) == len(PROCEDURES)


async def install(conn: asyncmy.Connection) -> bool:
    """Create the procedures unless this version is there; True when they were (re)created. DROP
    then CREATE, as MySQL has no CREATE OR REPLACE PROCEDURE."""
    try:
        if await installed(conn):
            return False
        async with conn.cursor() as cur:
            for name, body in PROCEDURES.items():
                await cur.execute(f"DROP PROCEDURE IF EXISTS {name}")
                try:
                    await cur.execute(body.replace("\nBEGIN\n", f"\nCOMMENT '{COMMENT}'\nBEGIN\n", 1))
                except asyncmy.errors.MySQLError as exc:
                    if exc.args and exc.args[0] == 1304:  # created meanwhile by another process
                        continue
                    raise
        return True
    except asyncmy.errors.MySQLError as exc:
        args = exc.args
        reason = f"({args[0]}) {args[1]}" if len(args) >= 2 else str(exc)
        hint = ("\n  procedures = on needs the CREATE ROUTINE privilege on the database; or set procedures = off"
                if args and args[0] in PRIVILEGE_ERRORS else "")
        raise TargetError(f"could not create the TPC-C stored procedures: {reason}{hint}") from None


class ProcedureSession(Session):
    """One terminal with `procedures = on`: the same inputs as client-side mode, one CALL each."""

    def __init__(self, wl: Tpcc, rng: random.Random, w: int, d_stock_level: int) -> None:
        self.wl = wl
        self.w = w
        self.inputs = Inputs(wl, rng, w, d_stock_level)
        self.conn: asyncmy.Connection | None = None
        self.calls: list[Any] = []
        self.k: RunConstants | None = wl.constants

    def forget(self) -> None:
        self.conn = None
        self.calls = []

    async def pause(self, tx: int) -> None:
        """Clause 5.2.5's waits before transaction `tx` (keying_time = on), outside its response time."""
        await asyncio.sleep(self.inputs.pause_before(tx))

    async def _setup(self, conn: asyncmy.Connection) -> None:
        await self.wl.ensure_procedures(conn)
        if self.k is None:
            self.k = await self.wl._load_constants(conn)
        self.calls = [await conn.prepare(CALLS[name]) for name in self.wl.names]
        self.conn = conn

    async def run(self, conn: asyncmy.Connection, tx: int) -> int:
        if conn is not self.conn:
            await self._setup(conn)
        k = self.k
        assert k is not None
        inp, w = self.inputs, self.w
        try:
            if tx == 0:
                d, c, items, supply, quantities, _ = inp.new_order(k)
                local = int(all(sw == w for sw in supply))
                # By stock key, so that concurrent orders lock stock rows in one order (no deadlocks).
                lines = sorted(zip(supply, items, quantities))
                repeats = len({(sw, i) for sw, i, _ in lines}) < len(lines)
                res = await self.calls[0].execute((
                    w, d, c, len(lines), local, "[" + ",".join(f"[{i},{sw},{q}]" for sw, i, q in lines) + "]",
                    int(repeats)))
                if not res.rows[0][0]:
                    raise IntendedRollback(1)  # the procedure rolled the order back
            elif tx == 1:
                d, c_w, c_d, c, last, cents = inp.payment(k)
                await self.calls[1].execute((w, d, c_w, c_d, c, last, cents))
            elif tx == 2:
                c, last = inp.customer(k)
                await self.calls[2].execute((w, inp.district(), c, last))
            elif tx == 3:
                await self.calls[3].execute((w, inp.carrier()))
            else:
                await self.calls[4].execute((w, inp.d_stock_level, inp.threshold()))
        except IntendedRollback:
            raise
        except BaseException:
            await rollback_quietly(conn)  # a lock wait timeout leaves the transaction open
            raise
        return 1
