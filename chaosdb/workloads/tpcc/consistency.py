"""After the chaos: TPC-C consistency conditions, lost acknowledged writes, replica convergence.

* The twelve consistency conditions of clause 3.3.2 (TPC-C 5.11), each a query that returns the rows that break
  it as ``(warehouse, district, which row, found, expected)``:

  1. ``W_YTD = sum(D_YTD)`` for every warehouse;
  2. ``D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)`` for every district;
  3. ``max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDER rows)`` for every district;
  4. ``sum(O_OL_CNT) = count(ORDER_LINE rows)`` for every district;
  5. an order has no carrier exactly when it has a NEW_ORDER row;
  6. ``O_OL_CNT`` = its ORDER_LINE rows, for every order;
  7. an order line has no delivery date exactly when its order has no carrier;
  8. ``W_YTD = sum(H_AMOUNT)`` of the warehouse's history;
  9. ``D_YTD = sum(H_AMOUNT)`` of the district's history;
  10. ``C_BALANCE = sum(OL_AMOUNT of delivered lines) - sum(H_AMOUNT)`` for every customer;
  11. ``count(ORDER) - count(NEW_ORDER)`` = the orders delivered at load time (2,100 at full scale) for every
      district *where no Delivery has run since the load* (Delivery removes NEW_ORDER rows, so the spec's
      condition holds only there): a district's oldest NEW_ORDER row still being the load's first undelivered
      order says so. Needs the scale the pack's loader recorded (``tpcc_meta``); other districts, and databases
      loaded by other tools, are counted as not applicable, not as passing;
  12. ``C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT of delivered lines)`` for every customer.

  Every condition holds on any committed snapshot of a database loaded by
  :mod:`chaosdb.workloads.tpcc.loader` and changed only by complete TPC-C transactions, at any scale.
* Ledger: every New-Order the client saw commit (samples with outcome
  ``committed`` and a key ``w:d:o``) must exist in ``orders``; ambiguous ones are
  reported apart (present or not, both are allowed).
* Convergence: the same per-table checksums on every server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from chaosdb.workloads.tpcc.rand import Scale
from chaosdb.workloads.tpcc.schema import TABLES

__all__ = ["Condition", "CONDITIONS", "check_conditions", "check_ledger", "table_checksums", "CONDITION_QUERIES",
           "ALL_CONDITIONS"]


@dataclass(frozen=True)
class Condition:
    """One consistency condition: its number in clause 3.3.2, the rule, what a row that breaks it is (``row``:
    warehouse, district, customer, order or order line), and the query returning those rows as
    ``(warehouse, district, row id, found, expected)``."""

    number: int
    rule: str
    row: str
    sql: str


_DELIVERED_BY_CUSTOMER = (
    "(SELECT o_w_id, o_d_id, o_c_id, sum(ol_amount) AS s FROM orders JOIN order_line "
    "ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE ol_delivery_d IS NOT NULL "
    "GROUP BY o_w_id, o_d_id, o_c_id) dl ON dl.o_w_id = c_w_id AND dl.o_d_id = c_d_id AND dl.o_c_id = c_id")
_HISTORY_BY_CUSTOMER = (
    "(SELECT h_c_w_id, h_c_d_id, h_c_id, sum(h_amount) AS s FROM history GROUP BY h_c_w_id, h_c_d_id, h_c_id) hc "
    "ON hc.h_c_w_id = c_w_id AND hc.h_c_d_id = c_d_id AND hc.h_c_id = c_id")

CONDITIONS: dict[int, Condition] = {c.number: c for c in (
    Condition(1, "W_YTD = sum(D_YTD)", "warehouse",
              "SELECT w_id, NULL::int, NULL::text, w_ytd, s FROM warehouse JOIN (SELECT d_w_id, sum(d_ytd) AS s "
              "FROM district GROUP BY d_w_id) d ON d.d_w_id = w_id WHERE w_ytd <> s ORDER BY 1"),
    Condition(2, "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)", "district",
              "SELECT d_w_id, d_id, NULL::text, d_next_o_id - 1, "
              "concat('max(O_ID) ', mo, ', max(NO_O_ID) ', coalesce(mno::text, 'none')) FROM district "
              "JOIN (SELECT o_w_id, o_d_id, max(o_id) AS mo FROM orders GROUP BY o_w_id, o_d_id) o "
              "ON o.o_w_id = d_w_id AND o.o_d_id = d_id "
              "LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) AS mno FROM new_order GROUP BY no_w_id, no_d_id) n "
              "ON n.no_w_id = d_w_id AND n.no_d_id = d_id "
              "WHERE d_next_o_id - 1 <> mo OR (mno IS NOT NULL AND mno <> mo) ORDER BY 1, 2"),
    Condition(3, "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDER)", "district",
              "SELECT no_w_id, no_d_id, NULL::text, max(no_o_id) - min(no_o_id) + 1, count(*) FROM new_order "
              "GROUP BY no_w_id, no_d_id HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*) ORDER BY 1, 2"),
    Condition(4, "sum(O_OL_CNT) = count(ORDER_LINE)", "district",
              "SELECT o.o_w_id, o.o_d_id, NULL::text, o.s, coalesce(l.c, 0) FROM "
              "(SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS s FROM orders GROUP BY o_w_id, o_d_id) o LEFT JOIN "
              "(SELECT ol_w_id, ol_d_id, count(*) AS c FROM order_line GROUP BY ol_w_id, ol_d_id) l "
              "ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id WHERE o.s <> coalesce(l.c, 0) ORDER BY 1, 2"),
    Condition(5, "O_CARRIER_ID is null exactly when the order has a NEW_ORDER row", "order",
              "SELECT o_w_id, o_d_id, concat('order ', o_id), "
              "concat('carrier ', coalesce(o_carrier_id::text, 'none')), "
              "CASE WHEN no_o_id IS NULL THEN 'a carrier (no NEW_ORDER row)' ELSE 'none (a NEW_ORDER row)' END "
              "FROM orders LEFT JOIN new_order ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id "
              "WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL) ORDER BY 1, 2, o_id"),
    Condition(6, "O_OL_CNT = count(ORDER_LINE) of the order", "order",
              "SELECT o_w_id, o_d_id, concat('order ', o_id), o_ol_cnt, coalesce(l.c, 0) FROM orders LEFT JOIN "
              "(SELECT ol_w_id, ol_d_id, ol_o_id, count(*) AS c FROM order_line GROUP BY ol_w_id, ol_d_id, ol_o_id) l "
              "ON l.ol_w_id = o_w_id AND l.ol_d_id = o_d_id AND l.ol_o_id = o_id "
              "WHERE o_ol_cnt <> coalesce(l.c, 0) ORDER BY 1, 2, o_id"),
    Condition(7, "OL_DELIVERY_D is null exactly when the order's O_CARRIER_ID is null", "order line",
              "SELECT ol_w_id, ol_d_id, concat('order ', ol_o_id, ' line ', ol_number), "
              "concat('delivery date ', CASE WHEN ol_delivery_d IS NULL THEN 'none' ELSE 'set' END), "
              "concat('carrier ', coalesce(o_carrier_id::text, 'none')) "
              "FROM order_line JOIN orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id "
              "WHERE (ol_delivery_d IS NULL) <> (o_carrier_id IS NULL) ORDER BY 1, 2, ol_o_id, ol_number"),
    Condition(8, "W_YTD = sum(H_AMOUNT) of the warehouse", "warehouse",
              "SELECT w_id, NULL::int, NULL::text, w_ytd, coalesce(h.s, 0) FROM warehouse LEFT JOIN "
              "(SELECT h_w_id, sum(h_amount) AS s FROM history GROUP BY h_w_id) h ON h.h_w_id = w_id "
              "WHERE w_ytd <> coalesce(h.s, 0) ORDER BY 1"),
    Condition(9, "D_YTD = sum(H_AMOUNT) of the district", "district",
              "SELECT d_w_id, d_id, NULL::text, d_ytd, coalesce(h.s, 0) FROM district LEFT JOIN "
              "(SELECT h_w_id, h_d_id, sum(h_amount) AS s FROM history GROUP BY h_w_id, h_d_id) h "
              "ON h.h_w_id = d_w_id AND h.h_d_id = d_id WHERE d_ytd <> coalesce(h.s, 0) ORDER BY 1, 2"),
    Condition(10, "C_BALANCE = sum(OL_AMOUNT of delivered lines) - sum(H_AMOUNT)", "customer",
              "SELECT c_w_id, c_d_id, concat('customer ', c_id), c_balance, coalesce(dl.s, 0) - coalesce(hc.s, 0) "
              f"FROM customer LEFT JOIN {_DELIVERED_BY_CUSTOMER} LEFT JOIN {_HISTORY_BY_CUSTOMER} "
              "WHERE c_balance <> coalesce(dl.s, 0) - coalesce(hc.s, 0) ORDER BY 1, 2, c_id"),
    Condition(11, "count(ORDER) - count(NEW_ORDER) = the orders delivered at load time, where no Delivery ran since",
              "district",
              "SELECT o.o_w_id, o.o_d_id, NULL::text, o.c - n.c, %(delivered)s::bigint FROM "
              "(SELECT o_w_id, o_d_id, count(*) AS c FROM orders GROUP BY o_w_id, o_d_id) o JOIN "
              "(SELECT no_w_id, no_d_id, count(*) AS c, min(no_o_id) AS first FROM new_order "
              "GROUP BY no_w_id, no_d_id) n ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id "
              "WHERE n.first = %(first)s AND o.c - n.c <> %(delivered)s ORDER BY 1, 2"),
    Condition(12, "C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT of delivered lines)", "customer",
              "SELECT c_w_id, c_d_id, concat('customer ', c_id), c_balance + c_ytd_payment, coalesce(dl.s, 0) "
              f"FROM customer LEFT JOIN {_DELIVERED_BY_CUSTOMER} "
              "WHERE c_balance + c_ytd_payment <> coalesce(dl.s, 0) ORDER BY 1, 2, c_id"),
)}

ALL_CONDITIONS = tuple(CONDITIONS)
#: the rule and query of each condition, by number (kept for callers of the first releases)
CONDITION_QUERIES = {n: (c.rule, c.sql) for n, c in CONDITIONS.items()}

# districts condition 11 applies to: those whose oldest NEW_ORDER row is still the load's first undelivered order
_APPLICABLE_11 = (
    "SELECT count(*) FILTER (WHERE first = %(first)s), count(*) FROM (SELECT min(no_o_id) AS first FROM new_order "
    "GROUP BY no_w_id, no_d_id) n")


def _plain(v: Any) -> Any:
    return float(v) if hasattr(v, "as_tuple") else v


def _loaded_scale(conn) -> Scale | None:
    """The scale the pack's loader recorded, None for a database it did not load."""
    # asked without an error, which would end the snapshot the conditions are checked on
    if conn.execute("SELECT to_regclass('tpcc_meta') IS NULL").fetchone()[0]:
        return None
    meta = dict(conn.execute("SELECT k, v FROM tpcc_meta").fetchall())
    try:
        return Scale(warehouses=int(meta["warehouses"]), items=int(meta["items"]),
                     customers_per_district=int(meta["customers_per_district"]))
    except (KeyError, ValueError):
        return None


def check_conditions(conn, conditions: Iterable[int] = ALL_CONDITIONS, max_examples: int = 5) -> dict[str, Any]:
    """Each condition: ``ok``, how many rows break it, the districts (or warehouses) they are in, and up to
    *max_examples* of them as ``{"warehouse", "district", "row", "found", "expected"}``. Condition 11 says to
    how many districts it applied (``applies_to``) and why it did not apply to the others."""
    results: dict[str, Any] = {}
    wanted = list(conditions)
    scale = _loaded_scale(conn) if 11 in wanted else None
    for number in wanted:
        cond = CONDITIONS[number]
        entry: dict[str, Any] = {"condition": f"3.3.2.{number}", "rule": cond.rule, "row": cond.row}
        if number == 11:
            if scale is None:
                results[str(number)] = {**entry, "ok": True, "applies_to": 0, "violations": 0, "examples": [],
                                        "where": [], "not_applicable": "the database was not loaded by chaosdb "
                                        "(no tpcc_meta): the orders delivered at load time are unknown"}
                continue
            params = {"first": scale.first_new_order, "delivered": scale.first_new_order - 1}
            applies, districts = conn.execute(_APPLICABLE_11, params).fetchone()
            rows = conn.execute(cond.sql, params).fetchall()
            entry["applies_to"] = int(applies)
            if applies < districts:
                entry["not_applicable"] = (f"{districts - applies} of {districts} districts had a Delivery since the "
                                           "load (the condition holds only before the first one)")
        else:
            rows = conn.execute(cond.sql).fetchall()
        where = sorted({(r[0], r[1]) if r[1] is not None else (r[0],) for r in rows})
        results[str(number)] = {
            **entry, "ok": not rows, "violations": len(rows),
            "where": [{"warehouse": p[0], **({"district": p[1]} if len(p) > 1 else {})} for p in where[:20]],
            "examples": [{"warehouse": r[0], **({"district": r[1]} if r[1] is not None else {}),
                          **({"row": r[2]} if r[2] is not None else {}), "found": _plain(r[3]),
                          "expected": _plain(r[4])} for r in rows[:max_examples]],
        }
    conn.rollback()
    failed = [n for n, r in results.items() if not r["ok"]]
    return {"ok": not failed, "failed": failed, "conditions": results,
            "summary": "every condition holds" if not failed else "; ".join(
                f"3.3.2.{n} ({results[n]['rule']}) broken in {results[n]['violations']} {results[n]['row']}(s), "
                + ", ".join(_place(p) for p in results[n]["where"][:3]) for n in failed)}


def _place(p: dict[str, Any]) -> str:
    return f"warehouse {p['warehouse']}" + (f" district {p['district']}" if "district" in p else "")


def check_ledger(conn, committed: Iterable[str], ambiguous: Iterable[str], max_examples: int = 10) -> dict[str, Any]:
    """Which acknowledged New-Orders (keys ``w:d:o``) are missing from ``orders``."""

    def parse(keys: Iterable[str]) -> list[tuple[int, int, int]]:
        out = []
        for k in keys:
            try:
                w, d, o = (int(x) for x in k.split(":"))
            except ValueError:
                continue
            out.append((w, d, o))
        return out

    acked = sorted(set(parse(committed)))
    unknown = sorted(set(parse(ambiguous)) - set(acked))
    present: set[tuple[int, int, int]] = set()
    by_district: dict[tuple[int, int], list[int]] = {}
    for w, d, o in acked + unknown:
        by_district.setdefault((w, d), []).append(o)
    for (w, d), ids in by_district.items():
        rows = conn.execute("SELECT o_id FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_id = ANY(%s)",
                            (w, d, ids)).fetchall()
        present.update((w, d, r[0]) for r in rows)
    conn.rollback()
    missing = [k for k in acked if k not in present]
    return {
        "ok": not missing,
        "acknowledged": len(acked),
        "missing": len(missing),
        "missing_examples": [f"{w}:{d}:{o}" for w, d, o in missing[:max_examples]],
        "ambiguous": len(unknown),
        "ambiguous_present": sum(1 for k in unknown if k in present),
    }


def table_checksums(conn, tables: Iterable[str] = TABLES) -> dict[str, str]:
    """An order-independent checksum of each table's rows (md5 of the sorted row texts)."""
    sums = {}
    for t in tables:
        sums[t] = conn.execute(
            f"SELECT count(*)::text || ':' || coalesce(md5(string_agg(md5(x::text), '' ORDER BY md5(x::text))), '') "
            f"FROM {t} x").fetchone()[0]
    conn.rollback()
    return sums
