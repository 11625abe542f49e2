"""YCSB workload A (50/50 read/update, zipfian) on SQL: ``locust -f load/ycsb.py --headless -u 8 --chaosdb-dsn "$DSN"``.

Load the table first: ``chaosdb load ycsb-load --records 10000``. See :mod:`chaosdb.load.locust_ycsb`.
"""

from chaosdb.load.locust_ycsb import YcsbUser  # noqa: F401
