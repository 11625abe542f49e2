"""The nine TPC-C tables (clause 1.3) in SQL that PostgreSQL and CockroachDB both accept.

``history`` has no primary key in the spec; CockroachDB adds its hidden ``rowid``.
Two extra tables hold the run's bookkeeping: ``tpcc_meta`` (scale, C_LOAD) and
``tpcc_load_progress`` (which warehouses are fully loaded, for resumable loads).
"""

from __future__ import annotations

__all__ = ["TABLES", "CREATE_STATEMENTS", "INDEX_STATEMENTS", "BOOKKEEPING", "DROP_ORDER"]

TABLES = ("warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock")

CREATE_STATEMENTS = [
    """CREATE TABLE IF NOT EXISTS warehouse (
        w_id integer NOT NULL PRIMARY KEY,
        w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20), w_city varchar(20),
        w_state char(2), w_zip char(9), w_tax numeric(4,4), w_ytd numeric(12,2))""",
    """CREATE TABLE IF NOT EXISTS district (
        d_id integer NOT NULL, d_w_id integer NOT NULL,
        d_name varchar(10), d_street_1 varchar(20), d_street_2 varchar(20), d_city varchar(20),
        d_state char(2), d_zip char(9), d_tax numeric(4,4), d_ytd numeric(12,2), d_next_o_id integer,
        PRIMARY KEY (d_w_id, d_id))""",
    """CREATE TABLE IF NOT EXISTS customer (
        c_id integer NOT NULL, c_d_id integer NOT NULL, c_w_id integer NOT NULL,
        c_first varchar(16), c_middle char(2), c_last varchar(16), c_street_1 varchar(20),
        c_street_2 varchar(20), c_city varchar(20), c_state char(2), c_zip char(9), c_phone char(16),
        c_since timestamp, c_credit char(2), c_credit_lim numeric(12,2), c_discount numeric(4,4),
        c_balance numeric(12,2), c_ytd_payment numeric(12,2), c_payment_cnt integer, c_delivery_cnt integer,
        c_data varchar(500),
        PRIMARY KEY (c_w_id, c_d_id, c_id))""",
    """CREATE TABLE IF NOT EXISTS history (
        h_c_id integer, h_c_d_id integer, h_c_w_id integer, h_d_id integer, h_w_id integer,
        h_date timestamp, h_amount numeric(6,2), h_data varchar(24))""",
    """CREATE TABLE IF NOT EXISTS new_order (
        no_o_id integer NOT NULL, no_d_id integer NOT NULL, no_w_id integer NOT NULL,
        PRIMARY KEY (no_w_id, no_d_id, no_o_id))""",
    """CREATE TABLE IF NOT EXISTS orders (
        o_id integer NOT NULL, o_d_id integer NOT NULL, o_w_id integer NOT NULL, o_c_id integer,
        o_entry_d timestamp, o_carrier_id integer, o_ol_cnt integer, o_all_local integer,
        PRIMARY KEY (o_w_id, o_d_id, o_id))""",
    """CREATE TABLE IF NOT EXISTS order_line (
        ol_o_id integer NOT NULL, ol_d_id integer NOT NULL, ol_w_id integer NOT NULL, ol_number integer NOT NULL,
        ol_i_id integer, ol_supply_w_id integer, ol_delivery_d timestamp, ol_quantity integer,
        ol_amount numeric(6,2), ol_dist_info char(24),
        PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))""",
    """CREATE TABLE IF NOT EXISTS item (
        i_id integer NOT NULL PRIMARY KEY, i_im_id integer, i_name varchar(24), i_price numeric(5,2),
        i_data varchar(50))""",
    """CREATE TABLE IF NOT EXISTS stock (
        s_i_id integer NOT NULL, s_w_id integer NOT NULL, s_quantity integer,
        s_dist_01 char(24), s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24), s_dist_05 char(24),
        s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24), s_dist_09 char(24), s_dist_10 char(24),
        s_ytd integer, s_order_cnt integer, s_remote_cnt integer, s_data varchar(50),
        PRIMARY KEY (s_w_id, s_i_id))""",
]

INDEX_STATEMENTS = [
    "CREATE INDEX IF NOT EXISTS customer_by_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE INDEX IF NOT EXISTS orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
]

BOOKKEEPING = [
    "CREATE TABLE IF NOT EXISTS tpcc_meta (k varchar(32) NOT NULL PRIMARY KEY, v varchar(64) NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tpcc_load_progress (part varchar(32) NOT NULL PRIMARY KEY, loaded_at timestamp)",
]

DROP_ORDER = ("order_line", "new_order", "orders", "history", "customer", "district", "stock", "item",
              "warehouse", "tpcc_meta", "tpcc_load_progress")
