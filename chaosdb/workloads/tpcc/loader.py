"""Populate a TPC-C database (clause 4.3.3.1): parallel, idempotent, resumable.

Each warehouse is loaded in one transaction together with its row in
``tpcc_load_progress``: an interrupted load leaves whole warehouses or none,
and a re-run loads only what is missing. Items are one more such part.
Warehouses are loaded by ``workers`` processes (generation is CPU bound), each
with its own connection, using COPY.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import datetime
from typing import Any, Callable

from chaosdb.core.errors import ChaosDBError
from chaosdb.workloads.tpcc import schema
from chaosdb.workloads.tpcc.rand import (
    DISTRICTS_PER_WAREHOUSE,
    Scale,
    astring,
    last_name,
    nstring,
    nurand,
    zip_code,
)

__all__ = ["load", "read_meta", "create_schema", "drop_schema", "loaded_parts"]


#: H_AMOUNT of the history row loaded for every customer (clause 4.3.3.1)
_HISTORY_AMOUNT = 10.00


def _connect(dsn: str):
    import psycopg  # noqa: PLC0415 - needs the postgres extra

    return psycopg.connect(dsn, connect_timeout=10)


def create_schema(conn) -> None:
    """Create the TPC-C tables, their indexes and the loader's bookkeeping tables."""
    for stmt in schema.BOOKKEEPING + schema.CREATE_STATEMENTS + schema.INDEX_STATEMENTS:
        conn.execute(stmt)
    conn.commit()


def drop_schema(conn) -> None:
    """Drop every TPC-C table."""
    for table in schema.DROP_ORDER:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.commit()


def read_meta(conn) -> dict[str, str]:
    """What the loader recorded about the data (scale, seed), {} before the first load."""
    try:
        return dict(conn.execute("SELECT k, v FROM tpcc_meta").fetchall())
    except Exception:
        conn.rollback()
        return {}


def loaded_parts(conn) -> set[str]:
    """The parts of the data already loaded (a load resumes with the others)."""
    return {r[0] for r in conn.execute("SELECT part FROM tpcc_load_progress").fetchall()}


def _data_with_original(rng: random.Random) -> str:
    data = astring(rng, 26, 50)
    if rng.random() < 0.1:
        pos = rng.randint(0, len(data) - 8)
        data = data[:pos] + "ORIGINAL" + data[pos + 8:]
    return data


def _load_items(dsn: str, scale: Scale, seed: int) -> int:
    rng = random.Random(seed)
    with _connect(dsn) as conn:
        if "items" in loaded_parts(conn):
            return 0
        conn.execute("DELETE FROM item")
        with conn.cursor().copy("COPY item (i_id, i_im_id, i_name, i_price, i_data) FROM STDIN") as copy:
            for i in range(1, scale.items + 1):
                copy.write_row((i, rng.randint(1, 10000), astring(rng, 14, 24),
                                round(rng.uniform(1.0, 100.0), 2), _data_with_original(rng)))
        conn.execute("INSERT INTO tpcc_load_progress (part, loaded_at) VALUES ('items', now())")
        conn.commit()
    return scale.items


def _load_warehouse(dsn: str, scale: Scale, w: int, c_load: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed * 1_000_003 + w)
    part = f"warehouse:{w}"
    now = datetime.now()
    counts: dict[str, int] = {}
    with _connect(dsn) as conn:
        if part in loaded_parts(conn):
            return {}
        for table, col in (("order_line", "ol_w_id"), ("new_order", "no_w_id"), ("orders", "o_w_id"),
                           ("history", "h_w_id"), ("customer", "c_w_id"), ("district", "d_w_id"),
                           ("stock", "s_w_id"), ("warehouse", "w_id")):
            conn.execute(f"DELETE FROM {table} WHERE {col} = %s", (w,))
        cur = conn.cursor()
        n_cust = scale.customers_per_district
        # year-to-date amounts agree with the history rows loaded below (conditions 3.3.2.8 and 9 at any scale:
        # the spec's 300,000.00 and 30,000.00 are 3,000 customers x 10.00)
        cur.execute(
            "INSERT INTO warehouse VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (w, astring(rng, 6, 10), astring(rng, 10, 20), astring(rng, 10, 20), astring(rng, 10, 20),
             astring(rng, 2, 2), zip_code(rng), round(rng.uniform(0, 0.2), 4), _HISTORY_AMOUNT * n_cust * DISTRICTS_PER_WAREHOUSE),
        )
        with cur.copy("COPY stock (s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, "
                      "s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, "
                      "s_remote_cnt, s_data) FROM STDIN") as copy:
            for i in range(1, scale.items + 1):
                copy.write_row((i, w, rng.randint(10, 100), *[astring(rng, 24, 24) for _ in range(10)],
                                0, 0, 0, _data_with_original(rng)))
        counts["stock"] = scale.items
        for d in range(1, DISTRICTS_PER_WAREHOUSE + 1):
            cur.execute(
                "INSERT INTO district VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (d, w, astring(rng, 6, 10), astring(rng, 10, 20), astring(rng, 10, 20), astring(rng, 10, 20),
                 astring(rng, 2, 2), zip_code(rng), round(rng.uniform(0, 0.2), 4), _HISTORY_AMOUNT * n_cust,
                 scale.orders_per_district + 1),
            )
            with cur.copy("COPY customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, "
                          "c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, "
                          "c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data) "
                          "FROM STDIN") as copy:
                for c in range(1, n_cust + 1):
                    number = c - 1 if c <= scale.last_names else nurand(rng, scale.a_last, 0,
                                                                          scale.last_names - 1, c_load)
                    copy.write_row((c, d, w, astring(rng, 8, 16), "OE", last_name(number), astring(rng, 10, 20),
                                    astring(rng, 10, 20), astring(rng, 10, 20), astring(rng, 2, 2), zip_code(rng),
                                    nstring(rng, 16, 16), now, "BC" if rng.random() < 0.1 else "GC", 50000.00,
                                    round(rng.uniform(0, 0.5), 4), -10.00, 10.00, 1, 0, astring(rng, 300, 500)))
            with cur.copy("COPY history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
                          "FROM STDIN") as copy:
                for c in range(1, n_cust + 1):
                    copy.write_row((c, d, w, d, w, now, _HISTORY_AMOUNT, astring(rng, 12, 24)))
            perm = list(range(1, n_cust + 1))
            rng.shuffle(perm)
            delivered_below = scale.first_new_order
            lines = 0
            with cur.copy("COPY orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, "
                          "o_all_local) FROM STDIN") as copy_o:
                order_lines: list[tuple[Any, ...]] = []
                for o in range(1, scale.orders_per_district + 1):
                    ol_cnt = rng.randint(5, 15)
                    delivered = o < delivered_below
                    copy_o.write_row((o, d, w, perm[o - 1], now, rng.randint(1, 10) if delivered else None,
                                      ol_cnt, 1))
                    for n in range(1, ol_cnt + 1):
                        order_lines.append((o, d, w, n, rng.randint(1, scale.items), w, now if delivered else None,
                                            5, 0.00 if delivered else round(rng.uniform(0.01, 9999.99), 2),
                                            astring(rng, 24, 24)))
            with cur.copy("COPY order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
                          "ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) FROM STDIN") as copy:
                for row in order_lines:
                    copy.write_row(row)
                    lines += 1
            with cur.copy("COPY new_order (no_o_id, no_d_id, no_w_id) FROM STDIN") as copy:
                for o in range(delivered_below, scale.orders_per_district + 1):
                    copy.write_row((o, d, w))
            counts["order_line"] = counts.get("order_line", 0) + lines
        counts["customer"] = n_cust * DISTRICTS_PER_WAREHOUSE
        cur.execute("INSERT INTO tpcc_load_progress (part, loaded_at) VALUES (%s, now())", (part,))
        conn.commit()
    return counts


def load(dsn: str, scale: Scale, workers: int = 2, seed: int = 42, drop: bool = False,
         progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Create the schema and load what is missing; return what was loaded and how long it took."""
    say = progress or (lambda _m: None)
    t0 = time.monotonic()
    with _connect(dsn) as conn:
        if drop:
            drop_schema(conn)
        create_schema(conn)
        meta = read_meta(conn)
        if meta:
            if int(meta["items"]) != scale.items or int(meta["customers_per_district"]) != scale.customers_per_district:
                raise ChaosDBError(
                    f"the database holds a TPC-C load with items={meta['items']} and customers_per_district="
                    f"{meta['customers_per_district']}; load with the same scale or pass drop=True to start over"
                )
            c_load = int(meta["c_load"])
            if int(meta["warehouses"]) < scale.warehouses:
                conn.execute("UPDATE tpcc_meta SET v = %s WHERE k = 'warehouses'", (str(scale.warehouses),))
        else:
            c_load = random.Random(seed).randint(0, 255)
            for k, v in (("warehouses", scale.warehouses), ("items", scale.items),
                         ("customers_per_district", scale.customers_per_district), ("c_load", c_load)):
                conn.execute("INSERT INTO tpcc_meta (k, v) VALUES (%s, %s)", (k, str(v)))
        conn.commit()
        done = loaded_parts(conn)
    todo = [w for w in range(1, scale.warehouses + 1) if f"warehouse:{w}" not in done]
    loaded: list[str] = []
    if "items" not in done:
        _load_items(dsn, scale, seed)
        loaded.append("items")
        say("items loaded")
    if todo:
        with ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo)))) as pool:
            futures = {pool.submit(_load_warehouse, dsn, scale, w, c_load, seed): w for w in todo}
            for fut in as_completed(futures):
                fut.result()
                loaded.append(f"warehouse:{futures[fut]}")
                say(f"warehouse {futures[fut]} loaded")
    with _connect(dsn) as conn:
        conn.execute("ANALYZE")
        conn.commit()
    return {"warehouses": scale.warehouses, "items": scale.items,
            "customers_per_district": scale.customers_per_district, "loaded": sorted(loaded),
            "already_loaded": sorted(done), "seconds": round(time.monotonic() - t0, 2)}
