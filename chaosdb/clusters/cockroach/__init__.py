"""A local CockroachDB cluster (``chaosdb cluster up --kind cockroach``); CockroachDB itself is :mod:`chaosdb.cockroach`.

* ``localcluster``: the nodes started, stopped, their status
* ``cluster_command``: ``chaosdb cluster up|status|down --kind cockroach``
"""
