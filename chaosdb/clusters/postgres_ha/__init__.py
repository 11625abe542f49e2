"""The embedded PostgreSQL HA cluster's launcher (the default kind ``postgres-ha``); the database itself (adapter,
nodes, processes, node faults) is :mod:`chaosdb.embedded`.

* ``cluster``: up (create or restart), down
* ``launcher``: the one code path that starts it, for ``chaosdb cluster up``, a run and a game day
* ``cluster_command``: the ``chaosdb cluster`` kind (:mod:`chaosdb.core.clusterkinds`)
* ``chaosd``: chaosd beside the cluster (``--chaosd``)
* ``endpoints``: where the cluster a configuration names is
* ``control``: the control that brings the cluster up for a run and down after it
* ``operations``: the cluster's lifecycle and operator changes as actions (up, down, rolling restart, scale out and in)
"""
