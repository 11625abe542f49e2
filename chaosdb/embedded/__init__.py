"""The embedded PostgreSQL HA cluster as a database: etcd + Patroni + PostgreSQL per node on loopback addresses, from
PyPI wheels, as unprivileged users. What starts and stops it (``chaosdb cluster up``, the default kind
``postgres-ha``; the control that gives a run its cluster) is its launcher, :mod:`chaosdb.clusters.postgres_ha`.

=====================  ======================================================================================
module                 job
=====================  ======================================================================================
``layout``             the plan of a cluster: nodes, addresses, ports
``state``              ``cluster.json`` and ``secrets.json``: a cluster folder read back
``config``             Patroni and etcd configuration, secrets, pgpass
``runtime``            the PostgreSQL and etcd binaries staged for the unprivileged users
``nodeproc``           a node's servers started and stopped
``processes``          a node's processes found on this machine
``health``             clients of the cluster, its status, the waits for health
``tls``                a secure cluster's certificates (``--secure``)
``nodes``              which node a role of the embedded cluster names now
``adapter``            the embedded cluster as a database adapter: roles (``embedded-leader``; ``"leader"`` is
                       shorthand), the majority rule, each node's processes, ports and user
``actions``            node faults and their rollbacks (kill, stop, suspend through the host engine; resume,
                       restart)
``probes``             its probes
``scale``              adding and removing a node
``ownership``          whose a cluster is: a run stops or purges only a cluster made for runs
=====================  ======================================================================================
"""
