"""What TPC-C's terminals need of the C executor, against a real server: the terminal's inputs drawn
in C by the specification's rules (written to a table and read back), a procedure's answer that its
transaction rolled back counted as a rollback, and a paced user's keying time waited, and ended by a
stop."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from bench_dsl.core.dsn import Dsn
from bench_dsl.language.statements import Capture, Draw, Execute, Pause, StatementStep, Transaction, Transactions
from bench_dsl.measure.recorder import new_counts
from bench_dsl.native import executor
from bench_dsl.native.executor import STOPPED, NativeUser
from bench_dsl.server.connect import ensure_database
from bench_dsl.workloads.tpcc.data import LAST_NAMES, SYLLABLES
from tests.conftest import fetch_all, run_sql

ITEMS, WAREHOUSES, HOME, DISTRICTS, CUSTOMERS = 1000, 3, 2, 10, 3000
ORDERS = 3000


def _user(dsn: Dsn, t: Transactions, values: tuple[int, ...] = (), seed: int = 5) -> tuple[NativeUser, Any]:
    """A user of the C executor, and the Counts it records into."""
    counts = new_counts(len(t.transactions))
    return NativeUser(executor.program(t, (1.0,) * len(t.transactions)), counts, seed, executor.options(dsn, 10),
                      values=values), counts


def _run_until(u: NativeUser, n: int) -> tuple[int, int, str]:
    """u's transactions, on a thread of the test's, until it completed n (or a minute passed)."""
    out: list[tuple[int, int, str]] = []
    assert u.core.connect()[0] == 0
    t = threading.Thread(target=lambda: out.append(u.core.run(False)))
    t.start()
    deadline = time.monotonic() + 60
    while u.completed < n and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    u.stop = True
    t.join(60)
    u.close()
    return out[0]


async def test_a_terminals_inputs_follow_the_specifications_rules(server: tuple[Dsn, object]) -> None:
    dsn = server[0]
    await ensure_database(dsn)
    await run_sql(dsn, dsn.database, "DROP TABLE IF EXISTS tp_inputs",
                  "CREATE TABLE tp_inputs (n INT AUTO_INCREMENT PRIMARY KEY, w INT, d INT, order_lines TEXT, cnt INT, "
                  "local_ INT, repeats INT, c_w INT, c_d INT, c INT, last VARCHAR(32))")
    # the step's values: w, d, then the order's four, the payment's two, the customer's two
    draws = (Draw("user", (0,)), Draw("uniform", (1, DISTRICTS)),
             Draw("tpcc_order", (0, WAREHOUSES, 8191, 37, ITEMS, 0.01, 0.01)),
             Draw("tpcc_remote", (0, 1, WAREHOUSES, DISTRICTS, 0.15)),
             Draw("tpcc_customer", (0.6, 255, 123, 1023, 259, CUSTOMERS, *SYLLABLES)))
    insert = Execute(("INSERT INTO tp_inputs (w, d, order_lines, cnt, local_, repeats, c_w, c_d, c, last) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",), tuple((k, 0) for k in range(10)))
    u, _ = _user(dsn, Transactions((Transaction((StatementStep(1, 1, draws, (insert,)),), False),)), values=(HOME,))
    assert _run_until(u, ORDERS)[0] == STOPPED
    rows = await fetch_all(dsn, "SELECT w, d, order_lines, cnt, local_, repeats, c_w, c_d, c, last FROM tp_inputs")
    assert len(rows) >= ORDERS
    unused = remote_lines = lines_total = remote_payments = by_name = 0
    for w, d, text, count, local, repeats, c_w, c_d, c, last in rows:
        assert w == HOME and 1 <= d <= DISTRICTS
        lines = json.loads(text)  # [[item, supplying warehouse, quantity], ...]
        assert len(lines) == count and 5 <= count <= 15
        keys = [(sw, i, q) for i, sw, q in lines]
        assert keys == sorted(keys)  # by stock key: concurrent orders lock stock rows in one order
        assert local == all(sw == HOME for _, sw, _ in lines)
        assert repeats == (len({(sw, i) for i, sw, _ in lines}) < count)
        assert all(1 <= q <= 10 and 1 <= sw <= WAREHOUSES for _, sw, q in lines)
        assert all(1 <= i <= ITEMS for i, _, _ in lines if i != ITEMS + 1)
        assert sum(i == ITEMS + 1 for i, _, _ in lines) <= 1  # one unused item, in an order rolled back
        unused += any(i == ITEMS + 1 for i, _, _ in lines)
        remote_lines += sum(sw != HOME for _, sw, _ in lines)
        lines_total += count
        if c_w != HOME:
            remote_payments += 1
            assert 1 <= c_w <= WAREHOUSES and 1 <= c_d <= DISTRICTS
        else:
            assert c_d == d  # a home customer is of the terminal's district
        if c == 0:
            by_name += 1
            assert last in LAST_NAMES
        else:
            assert 1 <= c <= CUSTOMERS and last is None
    n = len(rows)
    # the seed is fixed: these are one draw's shares, checked against the rules' with room to spare
    assert 0.005 * n < unused < 0.02 * n  # 1% of orders (2.4.1.4)
    assert 0.005 * lines_total < remote_lines < 0.02 * lines_total  # 1% of lines (2.4.1.5)
    assert 0.12 * n < remote_payments < 0.18 * n  # 15% of payments (2.5.1.2)
    assert 0.55 * n < by_name < 0.65 * n  # 60% by last name (2.5.1.2, 2.6.1.2)


async def test_a_procedure_that_says_it_rolled_back_counts_as_a_rollback(server: tuple[Dsn, object]) -> None:
    dsn = server[0]
    await ensure_database(dsn)
    await run_sql(dsn, dsn.database, "DROP TABLE IF EXISTS tp_outcome", "DROP PROCEDURE IF EXISTS tp_outcome",
                  "CREATE TABLE tp_outcome (n INT AUTO_INCREMENT PRIMARY KEY, kept INT)",
                  # as TPC-C's New-Order: its answer's first column says whether it kept its work,
                  # then other columns, and the CALL's own result after it
                  "CREATE PROCEDURE tp_outcome(p INT) BEGIN INSERT INTO tp_outcome (kept) VALUES (p); "
                  "SELECT p, 'some text', 12.5; END")
    call = Execute(("CALL tp_outcome(?)",), ((0, 0),), outcome=True)
    u, counts = _user(dsn, Transactions((Transaction((StatementStep(1, 1, (Draw("uniform", (0, 3)),), (call,)),),
                                                     False),)))
    assert _run_until(u, 400)[0] == STOPPED
    ((_, done, statements, _, rollbacks),) = counts.take()
    kept = await fetch_all(dsn, "SELECT SUM(kept = 0), COUNT(*) FROM tp_outcome")
    assert (rollbacks, done) == tuple(int(v) for v in kept[0]) and statements == done
    assert 0 < rollbacks < done


def test_a_paced_user_waits_its_keying_time_and_a_stop_ends_the_wait(server: tuple[Dsn, object]) -> None:
    dsn = server[0]
    one = Transaction((StatementStep(1, 1, (), (Execute(("DO 1",), ()),)),), False)
    # a keying time of 0.2 s and no think time: three transactions cannot take less than 0.6 s
    u, _ = _user(dsn, Transactions((one,), (Pause(0.2, 0.0, 0.0),)))
    t0 = time.monotonic()
    assert _run_until(u, 3)[0] == STOPPED
    assert u.completed >= 3 and time.monotonic() - t0 >= 0.6
    # a keying time of 1,000 s: the user waits in it, and the stop ends the wait, not its end
    u, _ = _user(dsn, Transactions((one,), (Pause(1000.0, 5.0, 50.0),)))
    assert u.core.connect()[0] == 0
    out: list[tuple[int, int, str]] = []
    t = threading.Thread(target=lambda: out.append(u.core.run(False)))
    t.start()
    t.join(0.5)
    assert t.is_alive() and u.completed == 0
    u.stop = True
    t.join(60)
    assert not t.is_alive() and out[0][0] == STOPPED and u.completed == 0
    u.close()


def test_users_in_their_keying_time_are_no_stall(server: tuple[Dsn, object]) -> None:
    """A paced user of the C executor leaves the transactions while it waits (as one on asyncmy does,
    tests/engine/test_arrivals.py): a keying time of 0.3 s between transactions is never a stall."""
    from bench_dsl.measure.stalls import Quiet, Stalls, quiet_spans

    one = Transaction((StatementStep(1, 1, (), (Execute(("DO 1",), ()),)),), False)
    u, counts = _user(dsn := server[0], Transactions((one,), (Pause(0.3, 0.0, 0.0),)))
    del dsn
    start = time.monotonic()
    counts.take()
    assert _run_until(u, 4)[0] == STOPPED  # four keying times at least: counted, not timed
    ((_, done, _, total_us, _),) = counts.take()
    quiet = Quiet.from_counts(counts.quiet())
    waited = Stalls.of(quiet_spans([quiet], start, quiet.at))
    assert done >= 4
    # every quiet span of 50 ms or more, not only those a second long the stall figures count
    assert sum(b - a for a, b in waited.spans) <= total_us / 1e6 + 0.002, (waited, total_us)


async def test_what_a_statement_reads_back_is_carried_into_the_next(server: tuple[Dsn, object]) -> None:
    """The description's captures (TPC-C's client-side SQL, tpcc/client_sql.py): an insert id, a row
    count, the middle row's id, a name as text and a result as JSON, each read into a value the
    statements after it are given; a statement `when` a value that was never read is not sent; the
    transaction commits or rolls back on purpose by what it read; autocommit off sends no BEGIN."""
    dsn = server[0]
    await ensure_database(dsn)
    await run_sql(dsn, dsn.database, "DROP TABLE IF EXISTS cap_names", "DROP TABLE IF EXISTS cap_seq",
                  "DROP TABLE IF EXISTS cap_log",
                  "CREATE TABLE cap_names (id INT PRIMARY KEY, grp INT, name VARCHAR(20))",
                  # group 1: one name, group 2: three, group 3: none
                  "INSERT INTO cap_names VALUES (10, 1, 'ten'), (20, 2, 'twenty'), (21, 2, 'twenty-one'), "
                  "(22, 2, 'twenty-two')",
                  "CREATE TABLE cap_seq (id INT AUTO_INCREMENT PRIMARY KEY, grp INT)",
                  "CREATE TABLE cap_log (seq INT, grp INT, n INT, middle INT, name VARCHAR(20), found TEXT, never INT)")
    # values: group 0, its insert id 1, rows 2, the middle id 3, its name 4, the rows as JSON 5,
    # one never read 6, zero 7
    draws = (Draw("uniform", (1, 3)), *(Draw("captured"),) * 6, Draw("const", (0,)))
    executes = (
        Execute(("INSERT INTO cap_seq (grp) VALUES (?)",), ((0, 0),), captures=(Capture(1, "insert_id"),)),
        Execute(("SELECT id FROM cap_names WHERE grp = ? ORDER BY id",), ((0, 0),),
                captures=(Capture(2, "rows"), Capture(3, "middle"))),
        Execute(("SELECT id, name FROM cap_names WHERE id = ?",), ((3, 0),), captures=(Capture(4, "first_text", 1),)),
        Execute(("SELECT grp, id FROM cap_names WHERE grp = ? ORDER BY id",), ((0, 0),),
                captures=(Capture(5, "rows_json"),)),
        Execute(("INSERT INTO cap_log (seq, grp, n, middle, name, found) VALUES (?, ?, ?, ?, ?, ?)",),
                ((1, 1000), (0, 0), (2, 0), (3, 0), (4, 0), (5, 0))),
        Execute(("INSERT INTO cap_log (never) VALUES (?)",), ((6, 0),), when=6))
    t = Transactions((Transaction((StatementStep(1, 1, draws, executes),), True, keep=(2, 7, 1)),), autocommit=False)
    u, counts = _user(dsn, t)
    assert _run_until(u, 300)[0] == STOPPED
    ((_, done, statements, _, rollbacks),) = counts.take()
    logged = await fetch_all(dsn, "SELECT seq, grp, n, middle, name, found, never FROM cap_log")
    seq = dict(await fetch_all(dsn, "SELECT id, grp FROM cap_seq"))
    assert statements == 6 * done  # five statements sent and COMMIT or ROLLBACK: no BEGIN, the sixth never
    assert len(logged) == len(seq) == done - rollbacks and 0 < rollbacks < done  # group 3's rolled back
    expected = {1: (1, 10, "ten", [[1, 10]]), 2: (3, 21, "twenty-one", [[2, 20], [2, 21], [2, 22]])}
    for s, grp, n, middle, name, found, never in logged:
        assert seq[s - 1000] == grp and never is None
        assert (n, middle, name, json.loads(found)) == expected[grp]
