"""The set-based, pipelined TPC-C transactions write exactly what the spec's statement-per-row form writes.

Oracle: the straightforward implementation of clauses 2.4-2.7 (one statement per row, as the spec describes
them, and as this pack ran them before), kept here. For many seeds, the same inputs run through the oracle and
through the shipped transaction, each in its own transaction that is rolled back afterwards; every row either
one wrote (district, orders, new_order, order_line, stock, customer, warehouse, history) must be identical.
Runs on the session cluster's TPC-C database (tests/integration/test_load.py loads it).
"""

from __future__ import annotations

from datetime import datetime

import psycopg
import pytest

from chaosdb.workloads.executor import BusinessRollback
from chaosdb.workloads.tpcc import transactions as shipped
from chaosdb.workloads.tpcc.rand import DISTRICTS_PER_WAREHOUSE, RandomSource, Scale

pytestmark = pytest.mark.integration

SCALE = Scale.reduced(2, 10)


def oracle_new_order(conn, rnd: RandomSource, w_id: int) -> None:
    rng = rnd.rng
    d_id = rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    c_id = rnd.customer_id()
    ol_cnt = rng.randint(5, 15)
    rollback = rng.randint(1, 100) == 1
    lines = []
    for n in range(ol_cnt):
        i_id = rnd.item_id()
        if rollback and n == ol_cnt - 1:
            i_id = rnd.scale.items + 1
        remote = rnd.scale.warehouses > 1 and rng.randint(1, 100) == 1
        supply = rnd.other_warehouse(w_id) if remote else w_id
        lines.append((i_id, supply, rng.randint(1, 10)))
    all_local = int(all(s == w_id for _, s, _ in lines))
    cur = conn.cursor()
    cur.execute("SELECT w_tax FROM warehouse WHERE w_id = %s", (w_id,))
    o_id = cur.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %s AND d_id = %s "
                       "RETURNING d_next_o_id - 1", (w_id, d_id)).fetchone()[0]
    cur.execute("SELECT c_discount FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s", (w_id, d_id, c_id))
    cur.execute("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) "
                "VALUES (%s, %s, %s, %s, %s, NULL, %s, %s)", (o_id, d_id, w_id, c_id, FIXED_NOW, ol_cnt, all_local))
    cur.execute("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (%s, %s, %s)", (o_id, d_id, w_id))
    for number, (i_id, supply, qty) in enumerate(lines, start=1):
        item = cur.execute("SELECT i_price FROM item WHERE i_id = %s", (i_id,)).fetchone()
        if item is None:
            raise BusinessRollback("invalid item")
        s_qty, s_dist = cur.execute(f"SELECT s_quantity, s_dist_{d_id:02d} FROM stock WHERE s_w_id = %s AND "
                                    "s_i_id = %s FOR UPDATE", (supply, i_id)).fetchone()
        new_qty = s_qty - qty if s_qty >= qty + 10 else s_qty - qty + 91
        cur.execute("UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s, s_order_cnt = s_order_cnt + 1, "
                    "s_remote_cnt = s_remote_cnt + %s WHERE s_w_id = %s AND s_i_id = %s",
                    (new_qty, qty, int(supply != w_id), supply, i_id))
        cur.execute("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
                    "ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, "
                    "%s, %s)", (o_id, d_id, w_id, number, i_id, supply, qty, round(qty * float(item[0]), 2), s_dist))


def oracle_delivery(conn, rnd: RandomSource, w_id: int) -> None:
    carrier = rnd.rng.randint(1, 10)
    cur = conn.cursor()
    for d in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        row = cur.execute("SELECT no_o_id FROM new_order WHERE no_w_id = %s AND no_d_id = %s "
                          "ORDER BY no_o_id LIMIT 1 FOR UPDATE", (w_id, d)).fetchone()
        if row is None:
            continue
        o_id = row[0]
        cur.execute("DELETE FROM new_order WHERE no_w_id = %s AND no_d_id = %s AND no_o_id = %s", (w_id, d, o_id))
        c_id = cur.execute("UPDATE orders SET o_carrier_id = %s WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s "
                           "RETURNING o_c_id", (carrier, w_id, d, o_id)).fetchone()[0]
        total = cur.execute("UPDATE order_line SET ol_delivery_d = %s WHERE ol_w_id = %s AND ol_d_id = %s "
                            "AND ol_o_id = %s RETURNING ol_amount", (FIXED_NOW, w_id, d, o_id)).fetchall()
        cur.execute("UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1 "
                    "WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s", (sum(t[0] for t in total), w_id, d, c_id))


def oracle_payment(conn, rnd: RandomSource, w_id: int) -> None:
    rng = rnd.rng
    d_id = rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    if rnd.scale.warehouses > 1 and rng.randint(1, 100) <= 15:
        c_w_id, c_d_id = rnd.other_warehouse(w_id), rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    else:
        c_w_id, c_d_id = w_id, d_id
    by_name = rng.randint(1, 100) <= 60
    amount = round(rng.uniform(1.00, 5000.00), 2)
    cur = conn.cursor()
    w_name = cur.execute("UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %s RETURNING w_name",
                         (amount, w_id)).fetchone()[0]
    d_name = cur.execute("UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %s AND d_id = %s RETURNING d_name",
                         (amount, w_id, d_id)).fetchone()[0]
    c_id = None
    if by_name:
        rows = cur.execute("SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s "
                           "ORDER BY c_first", (c_w_id, c_d_id, rnd.customer_last_name())).fetchall()
        c_id = rows[(len(rows) + 1) // 2 - 1][0] if rows else None
    if c_id is None:
        c_id = rnd.customer_id()
    credit, c_data = cur.execute(
        "UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, "
        "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s "
        "RETURNING c_credit, c_data", (amount, amount, c_w_id, c_d_id, c_id)).fetchone()
    if credit == "BC":
        cur.execute("UPDATE customer SET c_data = %s WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                    (f"{c_id} {c_d_id} {c_w_id} {d_id} {w_id} {amount:.2f} | {c_data}"[:500], c_w_id, c_d_id, c_id))
    cur.execute("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (c_id, c_d_id, c_w_id, d_id, w_id, FIXED_NOW, amount, f"{w_name}    {d_name}"[:24]))


FIXED_NOW = datetime(2026, 1, 1, 12, 0, 0)

#: what each transaction may have written, read back the same way after either implementation
STATE = {
    "district": "SELECT d_w_id, d_id, d_next_o_id, d_ytd FROM district ORDER BY 1, 2",
    "warehouse": "SELECT w_id, w_ytd FROM warehouse ORDER BY 1",
    "orders": "SELECT o_w_id, o_d_id, o_id, o_c_id, o_carrier_id, o_ol_cnt, o_all_local FROM orders "
              "WHERE o_entry_d = %(now)s OR (o_w_id, o_d_id, o_id) IN (SELECT ol_w_id, ol_d_id, ol_o_id "
              "FROM order_line WHERE ol_delivery_d = %(now)s) ORDER BY 1, 2, 3",
    "new_order": "SELECT no_w_id, no_d_id, min(no_o_id), max(no_o_id), count(*) FROM new_order GROUP BY 1, 2 "
                 "ORDER BY 1, 2",
    "order_line": "SELECT ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, "
                  "ol_dist_info, ol_delivery_d FROM order_line WHERE ol_delivery_d = %(now)s "
                  "OR (ol_w_id, ol_d_id, ol_o_id) IN (SELECT o_w_id, o_d_id, o_id FROM orders "
                  "WHERE o_entry_d = %(now)s) ORDER BY 1, 2, 3, 4",
    "stock": "SELECT s_w_id, s_i_id, s_quantity, s_ytd, s_order_cnt, s_remote_cnt FROM stock "
             "WHERE s_order_cnt > 0 ORDER BY 1, 2",
    "customer": "SELECT c_w_id, c_d_id, c_id, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, "
                "md5(c_data) FROM customer WHERE c_payment_cnt <> 1 OR c_delivery_cnt <> 0 OR c_balance <> -10 "
                "ORDER BY 1, 2, 3",
    "history": "SELECT h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_amount, h_data FROM history "
               "WHERE h_date = %(now)s ORDER BY 1, 2, 3, 6",
}


def _state(conn) -> dict:
    return {name: conn.execute(sql, {"now": FIXED_NOW}).fetchall() for name, sql in STATE.items()}


def _outcome(run, conn, seed: int, w_id: int):
    """Run one transaction from seed on a fresh transaction, read what it wrote, roll it back."""
    rnd = RandomSource(SCALE, c_load=157, seed=seed)
    try:
        run(conn, rnd, w_id)
        result = ("done", _state(conn))
    except BusinessRollback:
        result = ("rollback", None)
    conn.rollback()
    return result


@pytest.fixture
def conn(tpcc_db, monkeypatch):
    # both implementations stamp the same time, so the rows compare equal
    monkeypatch.setattr(shipped, "datetime", type("FixedClock", (), {"now": staticmethod(lambda: FIXED_NOW)}))
    with psycopg.connect(tpcc_db.dsn()) as c:
        yield c


@pytest.mark.parametrize("name,oracle", [("new_order", oracle_new_order), ("payment", oracle_payment),
                                         ("delivery", oracle_delivery)])
def test_the_shipped_transaction_writes_what_the_row_by_row_form_writes(conn, name, oracle):
    shipped_run = getattr(shipped, name)
    outcomes = set()
    for seed in [*range(40), *ROLLBACK_SEEDS]:
        w_id = 1 + seed % 2
        want = _outcome(oracle, conn, seed, w_id)
        got = _outcome(lambda c, r, w: shipped_run(c, r, w), conn, seed, w_id)
        assert got[0] == want[0], (name, seed)
        if want[1] is not None:
            for table in STATE:
                assert got[1][table] == want[1][table], f"{name} seed {seed}: {table} differs"
        outcomes.add(got[0])
    assert "done" in outcomes
    if name == "new_order":
        assert "rollback" in outcomes  # the 1 % with an unused item number, rolled back by both


#: seeds whose New-Order draws the unused item number (found by replaying the draws)
ROLLBACK_SEEDS = (223, 324)


def test_stock_level_counts_what_the_spec_s_two_steps_count(conn):
    """2.8.2.2: read the district's next order number, then count the distinct items of its last 20 orders
    whose stock is below the threshold; the shipped single statement gives the same count."""
    for seed in range(30):
        rnd = RandomSource(SCALE, c_load=157, seed=seed)
        w_id, d_id = 1 + seed % 2, 1 + seed % DISTRICTS_PER_WAREHOUSE
        threshold = RandomSource(SCALE, c_load=157, seed=seed).rng.randint(10, 20)
        nxt = conn.execute("SELECT d_next_o_id FROM district WHERE d_w_id = %s AND d_id = %s",
                           (w_id, d_id)).fetchone()[0]
        want = conn.execute("SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = %s "
                            "AND ol_d_id = %s AND ol_o_id < %s AND ol_o_id >= %s AND s_w_id = %s "
                            "AND s_i_id = ol_i_id AND s_quantity < %s",
                            (w_id, d_id, nxt, nxt - 20, w_id, threshold)).fetchone()[0]
        got = shipped.stock_level(conn, rnd, w_id, d_id).details["low_stock"]
        assert got == want, (seed, got, want)
        conn.rollback()
