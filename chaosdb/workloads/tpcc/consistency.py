"""After the chaos: TPC-C consistency conditions, lost acknowledged writes, replica convergence.

* Conditions 1-4 of clause 3.3.2:
  1. ``W_YTD = sum(D_YTD)`` for every warehouse;
  2. ``D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)`` for every district;
  3. ``max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDER rows)`` for every district;
  4. ``sum(O_OL_CNT) = count(ORDER_LINE rows)`` for every district.
* Ledger: every New-Order the client saw commit (samples with outcome
  ``committed`` and a key ``w:d:o``) must exist in ``orders``; ambiguous ones are
  reported apart (present or not, both are allowed).
* Convergence: the same per-table checksums on every server.
"""

from __future__ import annotations

from typing import Any, Iterable

from chaosdb.workloads.tpcc.schema import TABLES

__all__ = ["check_conditions", "check_ledger", "table_checksums", "CONDITION_QUERIES"]

CONDITION_QUERIES = {
    1: ("W_YTD = sum(D_YTD)",
        "SELECT w_id, w_ytd, s FROM warehouse JOIN (SELECT d_w_id, sum(d_ytd) AS s FROM district GROUP BY d_w_id) d "
        "ON d.d_w_id = w_id WHERE w_ytd <> s ORDER BY w_id"),
    2: ("D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)",
        "SELECT d_w_id, d_id, d_next_o_id - 1, mo, mno FROM district "
        "JOIN (SELECT o_w_id, o_d_id, max(o_id) AS mo FROM orders GROUP BY o_w_id, o_d_id) o "
        "ON o.o_w_id = d_w_id AND o.o_d_id = d_id "
        "LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) AS mno FROM new_order GROUP BY no_w_id, no_d_id) n "
        "ON n.no_w_id = d_w_id AND n.no_d_id = d_id "
        "WHERE d_next_o_id - 1 <> mo OR (mno IS NOT NULL AND mno <> mo) ORDER BY d_w_id, d_id"),
    3: ("max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDER)",
        "SELECT no_w_id, no_d_id, max(no_o_id) - min(no_o_id) + 1, count(*) FROM new_order "
        "GROUP BY no_w_id, no_d_id HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*) ORDER BY 1, 2"),
    4: ("sum(O_OL_CNT) = count(ORDER_LINE)",
        "SELECT o.o_w_id, o.o_d_id, o.s, l.c FROM "
        "(SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS s FROM orders GROUP BY o_w_id, o_d_id) o JOIN "
        "(SELECT ol_w_id, ol_d_id, count(*) AS c FROM order_line GROUP BY ol_w_id, ol_d_id) l "
        "ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id WHERE o.s <> l.c ORDER BY 1, 2"),
}


def check_conditions(conn, conditions: Iterable[int] = (1, 2, 3, 4), max_examples: int = 5) -> dict[str, Any]:
    """Each condition: ``ok`` and up to *max_examples* violating rows."""
    results = {}
    for number in conditions:
        title, sql = CONDITION_QUERIES[number]
        rows = conn.execute(sql).fetchall()
        results[str(number)] = {
            "condition": f"3.3.2.{number}",
            "rule": title,
            "ok": not rows,
            "violations": len(rows),
            "examples": [[float(v) if hasattr(v, "as_tuple") else v for v in r] for r in rows[:max_examples]],
        }
    conn.rollback()
    return {"ok": all(r["ok"] for r in results.values()), "conditions": results}


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
