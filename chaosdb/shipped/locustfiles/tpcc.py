"""TPC-C-like load: ``locust -f load/tpcc.py --headless -u 10 -r 10 --chaosdb-dsn "$DSN"``.

The workload lives in :mod:`chaosdb.workloads.tpcc`; the Locust user and its
options in :mod:`chaosdb.load.locust_tpcc` (see its docstring for every option).
Load the database first: ``chaosdb load tpcc-load --warehouses 2 --dsn "$DSN"``.
"""

from chaosdb.load.locust_tpcc import TpccUser  # noqa: F401
