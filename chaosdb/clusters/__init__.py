"""Local labs: what starts, provisions and stops a cluster on this machine, one sub-package per cluster kind.

A kind is the ``cluster_command`` module of a sub-package (found by convention, :mod:`chaosdb.core.clusterkinds`).
A launcher may import the databases, the engines, the load and the workloads; nothing below it imports
``chaosdb.clusters`` (the CLI finds the kinds by convention, a game day starts a cluster through the launcher).

* ``postgres_ha``: the embedded PostgreSQL HA cluster (etcd + Patroni + PostgreSQL per node, the default kind), chaosd
  beside it, the control that gives a run its cluster, its lifecycle and operator changes as actions
* ``pd``: a PD cluster with simulated TiKV stores (``--kind pd``)
* ``cockroach``: CockroachDB nodes from a ``cockroach`` binary (``--kind cockroach``)
* ``kubernetes``: a local Kubernetes control plane with Chaos Mesh, kwok and optionally a real node (``--kind kubernetes``)
"""

#: activity modules besides ``probes``/``actions`` (:func:`chaosdb.activity_modules`)
ACTIVITY_MODULES = {"action": ["postgres_ha.operations"]}
