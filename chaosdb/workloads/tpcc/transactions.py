"""The five TPC-C transactions (clauses 2.4 - 2.8) on a psycopg 3 connection.

Each function runs inside the caller's transaction and does not commit: the
terminal (:mod:`chaosdb.workloads.tpcc.terminal`) commits, retries and
classifies. A New-Order with an unused item number raises :class:`BusinessRollback`
after doing its work, as the spec's 1 % rollbacks do (2.4.2.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chaosdb.workloads.executor import BusinessRollback
from chaosdb.workloads.tpcc.rand import DISTRICTS_PER_WAREHOUSE, RandomSource

__all__ = [
    "RUNNERS",
    "BusinessRollback",
    "TxnInfo",
    "delivery",
    "new_order",
    "order_status",
    "payment",
    "stock_level",
]


@dataclass
class TxnInfo:
    """What a transaction did, for the samples and the ledger of acknowledged writes."""

    key: str = ""  # New-Order: "w:d:o" of the order it wrote
    details: dict[str, Any] = field(default_factory=dict)


# New-Order in three statements plus the COMMIT (the spec's form takes 45 for an average order): one reads the
# items and locks their stock rows, in key order so that two New-Orders never deadlock on them (an unused item
# number is simply missing); one reads the warehouse and customer and takes the order number; one writes the
# order, its new-order row, every stock row (one UPDATE from arrays) and every order line (one INSERT). Locks
# are taken stock -> district here and customer -> warehouse -> district in Payment: no cycle.
_HEAD = ("WITH d AS (UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %(w)s AND d_id = %(d)s "
         "RETURNING d_tax, d_next_o_id - 1 AS o_id) "
         "SELECT w_tax, d.d_tax, d.o_id, c_discount FROM d, warehouse, customer "
         "WHERE w_id = %(w)s AND c_w_id = %(w)s AND c_d_id = %(d)s AND c_id = %(c)s")
_LINES_IN = ("SELECT s_w_id, s_i_id, s_quantity, {dist}, i_price FROM stock JOIN item ON i_id = s_i_id "
             "WHERE (s_w_id, s_i_id) IN (SELECT * FROM unnest(%s::int[], %s::int[])) "
             "ORDER BY s_w_id, s_i_id FOR UPDATE OF stock")
_WRITE = (
    "WITH o AS (INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) "
    "  VALUES (%(o)s, %(d)s, %(w)s, %(c)s, %(now)s, NULL, %(cnt)s, %(local)s)), "
    "n AS (INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (%(o)s, %(d)s, %(w)s)), "
    "s AS (UPDATE stock SET s_quantity = v.q, s_ytd = s_ytd + v.ytd, s_order_cnt = s_order_cnt + v.cnt, "
    "  s_remote_cnt = s_remote_cnt + v.rem FROM unnest(%(sw)s::int[], %(si)s::int[], %(sq)s::int[], "
    "  %(sytd)s::int[], %(scnt)s::int[], %(srem)s::int[]) AS v(w, i, q, ytd, cnt, rem) "
    "  WHERE s_w_id = v.w AND s_i_id = v.i) "
    "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, "
    "  ol_quantity, ol_amount, ol_dist_info) "
    "SELECT %(o)s, %(d)s, %(w)s, n, i, s, NULL, q, a, di FROM unnest(%(ln)s::int[], %(li)s::int[], %(ls)s::int[], "
    "  %(lq)s::int[], %(la)s::numeric[], %(ld)s::text[]) AS t(n, i, s, q, a, di)")


def _ints(values: Any) -> str:
    """An ``int[]`` (or ``numeric[]``) literal of *values*, made with one join: psycopg adapts a Python list element
    by element in Python, which was a fifth of the TPC-C driver's client CPU."""
    return "{" + ",".join(map(str, values)) + "}"


def _texts(values: list[str]) -> str:
    """A ``text[]`` literal of *values*, each element quoted (backslashes and double quotes escaped)."""
    return "{" + ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"


def new_order(conn, rnd: RandomSource, w_id: int, d_id: int | None = None, info: TxnInfo | None = None) -> TxnInfo:
    """TPC-C New-Order (clause 2.4): an order of 5 to 15 lines for a customer of district *d_id*, 1 % rolled back by an
    unused item."""
    rng = rnd.rng
    info = info or TxnInfo()
    d_id = d_id or rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    c_id = rnd.customer_id()
    ol_cnt = rng.randint(5, 15)
    rollback = rng.randint(1, 100) == 1
    lines = []
    for n in range(ol_cnt):
        i_id = rnd.item_id()
        if rollback and n == ol_cnt - 1:
            i_id = rnd.scale.items + 1  # unused item number
        remote = rnd.scale.warehouses > 1 and rng.randint(1, 100) == 1
        supply = rnd.other_warehouse(w_id) if remote else w_id
        lines.append((i_id, supply, rng.randint(1, 10)))
    all_local = int(all(s == w_id for _, s, _ in lines))
    # the stock rows first, the district (its next order number) second: the district's row, which every
    # New-Order and Payment of the district needs, is then held for two statements and the COMMIT, not three
    keys = sorted({(supply, i_id) for i_id, supply, _ in lines})
    stock = {(row[0], row[1]): [row[2], row[3], row[4]] for row in conn.execute(
        _LINES_IN.format(dist=f"s_dist_{d_id:02d}"), (_ints(k[0] for k in keys), _ints(k[1] for k in keys))).fetchall()}
    w_tax, d_tax, o_id, c_discount = conn.execute(_HEAD, {"w": w_id, "d": d_id, "c": c_id}).fetchone()
    info.key = f"{w_id}:{d_id}:{o_id}"
    for i_id, supply, _ in lines:
        if (supply, i_id) not in stock:
            raise BusinessRollback(f"Item number is not valid ({i_id})")
    # the order lines in order, each against the stock as the lines before it left it (an item may repeat)
    ln, li, ls, lq, la, ld = [], [], [], [], [], []
    changes: dict[tuple[int, int], list[int]] = {}  # (w, i) -> [ytd, order count, remote count]
    total = 0.0
    for number, (i_id, supply, qty) in enumerate(lines, start=1):
        row = stock[(supply, i_id)]
        s_qty = row[0]
        row[0] = s_qty - qty if s_qty >= qty + 10 else s_qty - qty + 91
        ch = changes.setdefault((supply, i_id), [0, 0, 0])
        ch[0] += qty
        ch[1] += 1
        ch[2] += int(supply != w_id)
        amount = round(qty * float(row[2]), 2)
        total += amount
        ln.append(number)
        li.append(i_id)
        ls.append(supply)
        lq.append(qty)
        la.append(amount)
        ld.append(row[1])
    ks = sorted(changes)
    conn.execute(_WRITE, {
        "o": o_id, "d": d_id, "w": w_id, "c": c_id, "now": datetime.now(), "cnt": ol_cnt, "local": all_local,
        "sw": _ints(k[0] for k in ks), "si": _ints(k[1] for k in ks), "sq": _ints(stock[k][0] for k in ks),
        "sytd": _ints(changes[k][0] for k in ks), "scnt": _ints(changes[k][1] for k in ks),
        "srem": _ints(changes[k][2] for k in ks),
        "ln": _ints(ln), "li": _ints(li), "ls": _ints(ls), "lq": _ints(lq), "la": _ints(la), "ld": _texts(ld)})
    info.details = {"ol_cnt": ol_cnt,
                    "total": round(total * (1 - float(c_discount)) * (1 + float(w_tax) + float(d_tax)), 2)}
    return info


# Payment's customer in one statement: a bad-credit customer's c_data gets the payment in front (2.5.2.2)
_PAY_CUSTOMER = (
    "UPDATE customer SET c_balance = c_balance - %(a)s, c_ytd_payment = c_ytd_payment + %(a)s, "
    "c_payment_cnt = c_payment_cnt + 1, "
    "c_data = CASE WHEN c_credit = 'BC' THEN left(%(bc)s || c_data, 500) ELSE c_data END "
    "WHERE c_w_id = %(w)s AND c_d_id = %(d)s AND c_id = %(c)s")
# ... then the warehouse's and the district's year-to-date and the history row, which names both
_PAY_BALANCES = (
    "WITH w AS (UPDATE warehouse SET w_ytd = w_ytd + %(a)s WHERE w_id = %(w)s RETURNING w_name), "
    "d AS (UPDATE district SET d_ytd = d_ytd + %(a)s WHERE d_w_id = %(w)s AND d_id = %(d)s RETURNING d_name) "
    "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
    "SELECT %(c)s, %(cd)s, %(cw)s, %(d)s, %(w)s, %(now)s, %(a)s, left(w.w_name || '    ' || d.d_name, 24) "
    "FROM w, d")

_BY_NAME = ("SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s ORDER BY c_first")


def _middle(rows: list) -> int | None:
    """The customer at position n/2 rounded up among those of that last name, by first name (2.5.2.2)."""
    return rows[(len(rows) + 1) // 2 - 1][0] if rows else None


def _customer_by_name(cur, w_id: int, d_id: int, c_last: str) -> int | None:
    return _middle(cur.execute(_BY_NAME, (w_id, d_id, c_last)).fetchall())


def payment(conn, rnd: RandomSource, w_id: int, d_id: int | None = None, info: TxnInfo | None = None) -> TxnInfo:
    """TPC-C Payment (clause 2.5): a customer pays, by id or by last name, 15 % of them from another warehouse."""
    rng = rnd.rng
    info = info or TxnInfo()
    d_id = d_id or rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    if rnd.scale.warehouses > 1 and rng.randint(1, 100) <= 15:
        c_w_id, c_d_id = rnd.other_warehouse(w_id), rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    else:
        c_w_id, c_d_id = w_id, d_id
    by_name = rng.randint(1, 100) <= 60
    amount = round(rng.uniform(1.00, 5000.00), 2)
    c_last = rnd.customer_last_name() if by_name else ""
    # the customer first and the warehouse and district last: every Payment of a warehouse queues on its row,
    # which is then held only from the last statement to the COMMIT (the rows written are the spec's)
    c_id = _customer_by_name(conn, c_w_id, c_d_id, c_last) if by_name else None
    if c_id is None:  # by id; or no such name, which cannot happen on a correctly loaded database
        c_id = rnd.customer_id()
    conn.execute(_PAY_CUSTOMER, {"a": amount, "w": c_w_id, "d": c_d_id, "c": c_id,
                                 "bc": f"{c_id} {c_d_id} {c_w_id} {d_id} {w_id} {amount:.2f} | "})
    conn.execute(_PAY_BALANCES, {"a": amount, "w": w_id, "d": d_id, "cw": c_w_id, "cd": c_d_id, "c": c_id,
                                 "now": datetime.now()})
    info.details = {"by_name": by_name, "remote": c_w_id != w_id}
    return info


def order_status(conn, rnd: RandomSource, w_id: int, d_id: int | None = None,
                 info: TxnInfo | None = None) -> TxnInfo:
    """TPC-C Order-Status (clause 2.6): a customer's last order and its lines, read only."""
    rng = rnd.rng
    info = info or TxnInfo()
    d_id = d_id or rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    c_id = _customer_by_name(conn, w_id, d_id, rnd.customer_last_name()) if rng.randint(1, 100) <= 60 else None
    c_id = c_id or rnd.customer_id()
    conn.execute("SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = %s AND c_d_id = %s "
                 "AND c_id = %s", (w_id, d_id, c_id)).fetchone()
    # the customer's last order and its lines in one statement
    lines = conn.execute(
        "SELECT o.o_id, o.o_entry_d, o.o_carrier_id, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d "
        "FROM (SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_c_id = %s "
        "ORDER BY o_id DESC LIMIT 1) o LEFT JOIN order_line ON ol_w_id = %s AND ol_d_id = %s AND ol_o_id = o.o_id",
        (w_id, d_id, c_id, w_id, d_id)).fetchall()
    info.details = {"lines": sum(1 for row in lines if row[3] is not None)}
    return info


# Delivery in one statement: the oldest new order of each district is taken (a concurrent Delivery that took it
# first makes this one skip that district, as the spec allows), its order gets the carrier, its lines the
# delivery date, its customer the amount; the districts delivered come back.
_DELIVERY = (
    "WITH taken AS (DELETE FROM new_order WHERE (no_w_id, no_d_id, no_o_id) IN ("
    "  SELECT no_w_id, no_d_id, min(no_o_id) FROM new_order WHERE no_w_id = %(w)s GROUP BY no_w_id, no_d_id) "
    "  RETURNING no_d_id AS d, no_o_id AS o), "
    "ord AS (UPDATE orders SET o_carrier_id = %(carrier)s FROM taken "
    "  WHERE o_w_id = %(w)s AND o_d_id = taken.d AND o_id = taken.o RETURNING o_d_id AS d, o_c_id AS c), "
    "lines AS (UPDATE order_line SET ol_delivery_d = %(now)s FROM taken "
    "  WHERE ol_w_id = %(w)s AND ol_d_id = taken.d AND ol_o_id = taken.o RETURNING ol_d_id AS d, ol_amount AS a), "
    "amounts AS (SELECT d, sum(a) AS a FROM lines GROUP BY d) "
    "UPDATE customer SET c_balance = c_balance + amounts.a, c_delivery_cnt = c_delivery_cnt + 1 "
    "FROM ord JOIN amounts ON amounts.d = ord.d "
    "WHERE c_w_id = %(w)s AND c_d_id = ord.d AND c_id = ord.c RETURNING c_d_id")


def delivery(conn, rnd: RandomSource, w_id: int, d_id: int | None = None, info: TxnInfo | None = None) -> TxnInfo:
    """TPC-C Delivery (clause 2.7): the oldest new order of each district delivered."""
    info = info or TxnInfo()
    carrier = rnd.rng.randint(1, 10)
    rows = conn.execute(_DELIVERY, {"w": w_id, "carrier": carrier, "now": datetime.now()}).fetchall()
    info.details = {"delivered": len(rows)}
    return info


# Stock-Level in one statement. The district's next order number bounds the order lines' index range as two
# one-row subqueries (init plans): their values are parameters of the index condition, so the plan stays an
# index range scan of order_line and a key lookup per stock row. Joined to district instead, the planner's
# estimate of the district (bloated by the constant updates of New-Order and Payment) flips the plan, under
# load, to a hash join over a sequential scan of stock: 65-110 ms instead of 0.5-0.8 ms (measured, W=2).
_STOCK_LEVEL = (
    "SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id "
    "WHERE ol_w_id = %(w)s AND ol_d_id = %(d)s "
    "AND ol_o_id >= (SELECT d_next_o_id - 20 FROM district WHERE d_w_id = %(w)s AND d_id = %(d)s) "
    "AND ol_o_id < (SELECT d_next_o_id FROM district WHERE d_w_id = %(w)s AND d_id = %(d)s) "
    "AND s_quantity < %(t)s")


def stock_level(conn, rnd: RandomSource, w_id: int, d_id: int | None = None,
                info: TxnInfo | None = None) -> TxnInfo:
    """TPC-C Stock-Level (clause 2.8): how many items of a district's last 20 orders are below a threshold, read only.
    """
    info = info or TxnInfo()
    d_id = d_id or rnd.rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    threshold = rnd.rng.randint(10, 20)
    low = conn.execute(_STOCK_LEVEL, {"w": w_id, "d": d_id, "t": threshold}).fetchone()[0]
    info.details = {"low_stock": low}
    return info


RUNNERS = {
    "new_order": new_order,
    "payment": payment,
    "order_status": order_status,
    "delivery": delivery,
    "stock_level": stock_level,
}
