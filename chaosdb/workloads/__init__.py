"""Workload logic (schema, loaders, transactions, checks), independent of Locust.

What is in it:

* ``executor``: One client connection that runs transactions with the pack's failure semantics
* ``histories``: workloads that record an operation history (list-append, rw-register on SQL; register on etcd)
* ``kv``: YCSB workload A on a key-value store
* ``outcomes``: How every attempted transaction ended, and which errors may be retried
* ``samples``: Per-transaction samples
* ``waiting``: Waiting on a connection's socket the way the process runs (gevent's loop in a Locust worker)
* ``ycsb``: YCSB-style workload A (50 % reads, 50 % updates, zipfian keys) on a SQL table
* ``tpcc/``: TPC-C-like workload
"""
