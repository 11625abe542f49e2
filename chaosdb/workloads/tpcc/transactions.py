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

__all__ = ["BusinessRollback", "TxnInfo", "new_order", "payment", "order_status", "delivery", "stock_level",
           "RUNNERS"]


@dataclass
class TxnInfo:
    """What a transaction did, for the samples and the ledger of acknowledged writes."""

    key: str = ""  # New-Order: "w:d:o" of the order it wrote
    details: dict[str, Any] = field(default_factory=dict)


def new_order(conn, rnd: RandomSource, w_id: int, d_id: int | None = None, info: TxnInfo | None = None) -> TxnInfo:
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
    cur = conn.cursor()
    w_tax = cur.execute("SELECT w_tax FROM warehouse WHERE w_id = %s", (w_id,)).fetchone()[0]
    d_tax, o_id = cur.execute(
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %s AND d_id = %s "
        "RETURNING d_tax, d_next_o_id - 1", (w_id, d_id)).fetchone()
    info.key = f"{w_id}:{d_id}:{o_id}"
    c_discount, _c_last, _c_credit = cur.execute(
        "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
        (w_id, d_id, c_id)).fetchone()
    now = datetime.now()
    cur.execute("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) "
                "VALUES (%s, %s, %s, %s, %s, NULL, %s, %s)", (o_id, d_id, w_id, c_id, now, ol_cnt, all_local))
    cur.execute("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (%s, %s, %s)", (o_id, d_id, w_id))
    total = 0.0
    dist_col = f"s_dist_{d_id:02d}"
    for number, (i_id, supply, qty) in enumerate(lines, start=1):
        item = cur.execute("SELECT i_price, i_name, i_data FROM item WHERE i_id = %s", (i_id,)).fetchone()
        if item is None:
            raise BusinessRollback(f"Item number is not valid ({i_id})")
        price = float(item[0])
        s_qty, s_dist = cur.execute(
            f"SELECT s_quantity, {dist_col} FROM stock WHERE s_w_id = %s AND s_i_id = %s FOR UPDATE",
            (supply, i_id)).fetchone()
        new_qty = s_qty - qty if s_qty >= qty + 10 else s_qty - qty + 91
        cur.execute("UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s, s_order_cnt = s_order_cnt + 1, "
                    "s_remote_cnt = s_remote_cnt + %s WHERE s_w_id = %s AND s_i_id = %s",
                    (new_qty, qty, int(supply != w_id), supply, i_id))
        amount = round(qty * price, 2)
        total += amount
        cur.execute("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
                    "ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) "
                    "VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, %s, %s)",
                    (o_id, d_id, w_id, number, i_id, supply, qty, amount, s_dist))
    info.details = {"ol_cnt": ol_cnt,
                    "total": round(total * (1 - float(c_discount)) * (1 + float(w_tax) + float(d_tax)), 2)}
    return info


def _customer_by_name(cur, w_id: int, d_id: int, c_last: str) -> int | None:
    rows = cur.execute("SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s "
                       "ORDER BY c_first", (w_id, d_id, c_last)).fetchall()
    if not rows:
        return None
    return rows[(len(rows) + 1) // 2 - 1][0]  # position n/2 rounded up (2.5.2.2)


def payment(conn, rnd: RandomSource, w_id: int, d_id: int | None = None, info: TxnInfo | None = None) -> TxnInfo:
    rng = rnd.rng
    info = info or TxnInfo()
    d_id = d_id or rng.randint(1, DISTRICTS_PER_WAREHOUSE)
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
    if by_name:
        c_id = _customer_by_name(cur, c_w_id, c_d_id, rnd.customer_last_name())
        if c_id is None:  # cannot happen on a correctly loaded database; fall back to an id
            c_id = rnd.customer_id()
    else:
        c_id = rnd.customer_id()
    credit, c_data = cur.execute(
        "UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, "
        "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s "
        "RETURNING c_credit, c_data", (amount, amount, c_w_id, c_d_id, c_id)).fetchone()
    if credit == "BC":
        new_data = f"{c_id} {c_d_id} {c_w_id} {d_id} {w_id} {amount:.2f} | {c_data}"[:500]
        cur.execute("UPDATE customer SET c_data = %s WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                    (new_data, c_w_id, c_d_id, c_id))
    cur.execute("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (c_id, c_d_id, c_w_id, d_id, w_id, datetime.now(), amount, f"{w_name}    {d_name}"[:24]))
    info.details = {"by_name": by_name, "remote": c_w_id != w_id}
    return info


def order_status(conn, rnd: RandomSource, w_id: int, d_id: int | None = None,
                 info: TxnInfo | None = None) -> TxnInfo:
    rng = rnd.rng
    info = info or TxnInfo()
    d_id = d_id or rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    cur = conn.cursor()
    c_id = _customer_by_name(cur, w_id, d_id, rnd.customer_last_name()) if rng.randint(1, 100) <= 60 else None
    c_id = c_id or rnd.customer_id()
    cur.execute("SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = %s AND c_d_id = %s "
                "AND c_id = %s", (w_id, d_id, c_id)).fetchone()
    order = cur.execute("SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = %s AND o_d_id = %s "
                        "AND o_c_id = %s ORDER BY o_id DESC LIMIT 1", (w_id, d_id, c_id)).fetchone()
    if order:
        cur.execute("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
                    "WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s", (w_id, d_id, order[0])).fetchall()
    return info


def delivery(conn, rnd: RandomSource, w_id: int, d_id: int | None = None, info: TxnInfo | None = None) -> TxnInfo:
    info = info or TxnInfo()
    carrier = rnd.rng.randint(1, 10)
    cur = conn.cursor()
    delivered = 0
    now = datetime.now()
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
                            "AND ol_o_id = %s RETURNING ol_amount", (now, w_id, d, o_id)).fetchall()
        cur.execute("UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1 "
                    "WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                    (sum(float(t[0]) for t in total), w_id, d, c_id))
        delivered += 1
    info.details = {"delivered": delivered}
    return info


def stock_level(conn, rnd: RandomSource, w_id: int, d_id: int | None = None,
                info: TxnInfo | None = None) -> TxnInfo:
    info = info or TxnInfo()
    d_id = d_id or rnd.rng.randint(1, DISTRICTS_PER_WAREHOUSE)
    threshold = rnd.rng.randint(10, 20)
    cur = conn.cursor()
    next_o = cur.execute("SELECT d_next_o_id FROM district WHERE d_w_id = %s AND d_id = %s",
                         (w_id, d_id)).fetchone()[0]
    low = cur.execute(
        "SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id "
        "WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id >= %s AND ol_o_id < %s AND s_quantity < %s",
        (w_id, d_id, next_o - 20, next_o, threshold)).fetchone()[0]
    info.details = {"low_stock": low}
    return info


RUNNERS = {
    "new_order": new_order,
    "payment": payment,
    "order_status": order_status,
    "delivery": delivery,
    "stock_level": stock_level,
}
