"""A local PD cluster with simulated TiKV stores (``chaosdb cluster up --kind pd``); TiKV itself is :mod:`chaosdb.tikv`.

* ``simulated_cluster``: PD and the simulator started, stopped, their status
* ``cluster_command``: ``chaosdb cluster up|status|down --kind pd``
"""
