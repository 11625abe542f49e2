"""The twelve TPC-C consistency conditions (clause 3.3.2) on a real PostgreSQL: a freshly loaded reduced-scale
database meets all of them, and each one, broken on purpose, is reported with the warehouse and district where it
breaks. Every break is made in a transaction the check rolls back, so the database is never changed."""

from __future__ import annotations

import psycopg
import pytest

from chaosdb.load import integrity
from chaosdb.workloads.tpcc import consistency, loader
from chaosdb.workloads.tpcc.rand import RandomSource, Scale
from chaosdb.workloads.tpcc.transactions import delivery

DATABASE = "tpcc_conditions"
SCALE = Scale.reduced(2, 100)  # 2 warehouses, 30 customers and orders per district, 300 items


@pytest.fixture(scope="module")
def conditions_dsn(pg_cluster):
    """A database of its own in the session cluster, loaded at a reduced scale, dropped at the end."""
    admin = pg_cluster.dsn(user="postgres", database="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE} OWNER {pg_cluster.app_user}")
    dsn = pg_cluster.dsn(database=DATABASE)
    loader.load(dsn, SCALE, workers=1)
    yield dsn
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


def _one(conn, sql: str, *args):
    return conn.execute(sql, args).fetchone()


#: per condition: statements that break it (warehouse, district) and that place, as the report must name it
BREAKS = {
    1: (["UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 1"], {"warehouse": 1}),
    2: (["UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 2"],
        {"warehouse": 1, "district": 2}),
    3: (["DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 3 AND no_o_id = "
         "(SELECT min(no_o_id) + 1 FROM new_order WHERE no_w_id = 1 AND no_d_id = 3)"], {"warehouse": 1, "district": 3}),
    4: (["UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_w_id = 1 AND o_d_id = 4 AND o_id = 1"],
        {"warehouse": 1, "district": 4}),
    5: (["UPDATE orders SET o_carrier_id = NULL WHERE o_w_id = 1 AND o_d_id = 5 AND o_id = 1"],
        {"warehouse": 1, "district": 5}),
    6: (["DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 6 AND ol_o_id = 2 AND ol_number = 1"],
        {"warehouse": 1, "district": 6}),
    7: (["UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 1 AND ol_d_id = 7 AND ol_o_id = 3 "
         "AND ol_number = 1"], {"warehouse": 1, "district": 7}),
    8: (["UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 2"], {"warehouse": 2}),
    9: (["UPDATE history SET h_amount = h_amount + 1 WHERE ctid = "
         "(SELECT ctid FROM history WHERE h_w_id = 2 AND h_d_id = 9 LIMIT 1)"], {"warehouse": 2, "district": 9}),
    10: (["UPDATE customer SET c_balance = c_balance + 1, c_ytd_payment = c_ytd_payment - 1 "
          "WHERE c_w_id = 2 AND c_d_id = 10 AND c_id = 5"], {"warehouse": 2, "district": 10}),
    # an order and its NEW_ORDER row removed together: 2, 3, 5 and 7 still hold in that district, 11 does not
    11: (["DELETE FROM order_line WHERE ol_w_id = 2 AND ol_d_id = 1 AND ol_o_id = 1",
          "DELETE FROM orders WHERE o_w_id = 2 AND o_d_id = 1 AND o_id = 1"], {"warehouse": 2, "district": 1}),
    12: (["UPDATE customer SET c_ytd_payment = c_ytd_payment + 1 WHERE c_w_id = 2 AND c_d_id = 3 AND c_id = 7"],
         {"warehouse": 2, "district": 3}),
}


def test_a_freshly_loaded_reduced_scale_database_meets_all_twelve(conditions_dsn):
    """The year-to-date amounts agree with HISTORY at any scale (3.3.2.8 and 9), and 11 applies everywhere."""
    with psycopg.connect(conditions_dsn) as conn:
        assert _one(conn, "SELECT w_ytd FROM warehouse WHERE w_id = 1")[0] == 30 * 10 * 10
        assert _one(conn, "SELECT d_ytd FROM district WHERE d_w_id = 1 AND d_id = 1")[0] == 30 * 10
        result = consistency.check_conditions(conn)
    assert result["ok"], result["summary"]
    assert sorted(map(int, result["conditions"])) == list(range(1, 13))
    assert result["conditions"]["11"]["applies_to"] == 20 and "not_applicable" not in result["conditions"]["11"]
    assert result["summary"] == "every condition holds"


@pytest.mark.parametrize("number", sorted(BREAKS))
def test_each_condition_broken_on_purpose_is_reported_where_it_breaks(conditions_dsn, number):
    statements, place = BREAKS[number]
    with psycopg.connect(conditions_dsn) as conn:
        for sql in statements:
            assert conn.execute(sql).rowcount >= 1, sql
        result = consistency.check_conditions(conn)  # rolls the break back when it is done
        assert consistency.check_conditions(conn)["ok"], "the break was not rolled back"
    entry = result["conditions"][str(number)]
    assert not result["ok"] and not entry["ok"] and str(number) in result["failed"]
    assert place in entry["where"], entry
    assert entry["examples"] and all(key in entry["examples"][0] for key in ("found", "expected", "warehouse"))
    said = next(part for part in result["summary"].split("; ") if part.startswith(f"3.3.2.{number} "))
    named = f"warehouse {place['warehouse']}" + (f" district {place['district']}" if "district" in place else "")
    assert named in said, said


def test_condition_11_applies_only_where_no_delivery_ran(conditions_dsn):
    """A Delivery takes the oldest NEW_ORDER row of each district of its warehouse: from then on the difference of
    the counts grows with every delivery, so the condition no longer applies there, and the report says so."""
    with psycopg.connect(conditions_dsn) as conn:
        c_load = int(_one(conn, "SELECT v FROM tpcc_meta WHERE k = 'c_load'")[0])
        assert delivery(conn, RandomSource(SCALE, c_load, seed=1), 2).details["delivered"] == 10
        result = consistency.check_conditions(conn)
    assert result["ok"], result["summary"]
    entry = result["conditions"]["11"]
    assert entry["applies_to"] == 10 and entry["not_applicable"].startswith("10 of 20 districts had a Delivery")


def test_condition_11_is_not_applicable_without_the_loaders_record(conditions_dsn):
    with psycopg.connect(conditions_dsn) as conn:
        conn.execute("DROP TABLE tpcc_meta")
        result = consistency.check_conditions(conn, [11])
    assert result["ok"] and "no tpcc_meta" in result["conditions"]["11"]["not_applicable"]


def test_the_probe_names_the_broken_condition(conditions_dsn, caplog):
    """Through the activity: a committed break is found (then repaired), the log names condition and district."""
    with psycopg.connect(conditions_dsn) as conn:
        conn.execute("UPDATE customer SET c_balance = c_balance + 2 WHERE c_w_id = 1 AND c_d_id = 8 AND c_id = 3")
    try:
        assert not integrity.tpcc_is_consistent(dsn=conditions_dsn)
        assert "3.3.2.10" in caplog.text and "warehouse 1 district 8" in caplog.text
        found = integrity.tpcc_consistency(conditions=[10, 12], dsn=conditions_dsn)
        assert found["failed"] == ["10", "12"]
    finally:
        with psycopg.connect(conditions_dsn) as conn:
            conn.execute("UPDATE customer SET c_balance = c_balance - 2 WHERE c_w_id = 1 AND c_d_id = 8 AND c_id = 3")
    assert integrity.tpcc_is_consistent(dsn=conditions_dsn)
