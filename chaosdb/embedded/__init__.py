"""The embedded PostgreSQL HA cluster (``chaosdb cluster up``, the default kind ``postgres-ha``): etcd + Patroni +
PostgreSQL per node on loopback addresses, from PyPI wheels, as unprivileged users.

=====================  ======================================================================================
module                 job
=====================  ======================================================================================
``cluster``            up (create or restart), down, status
``cluster_command``    the ``chaosdb cluster`` kind (:mod:`chaosdb.core.clusterkinds`)
``layout``             the plan of a cluster: nodes, addresses, ports
``state``              ``cluster.json`` and ``secrets.json``: a cluster folder read back
``config``             Patroni and etcd configuration, secrets, pgpass
``runtime``            the PostgreSQL and etcd binaries staged for the unprivileged users
``nodeproc``           a node's servers started and stopped
``processes``          a node's processes found on this machine
``health``             clients of the cluster, its status, the waits for health
``tls``                a secure cluster's certificates (``--secure``)
``chaosd``             chaosd beside the cluster (``--chaosd``)
``endpoints``          where the cluster a configuration names is (:func:`chaosdb.core.embedded.embedded_endpoints`)
``nodes``              which node a role of the embedded cluster names now
``adapter``            the embedded cluster as a database adapter: roles (``embedded-leader``; ``"leader"`` is
                       shorthand), the majority rule, each node's processes, ports and user
``actions``            node faults and their rollbacks (kill, stop, suspend through the host engine; resume,
                       restart)
``operations``         the cluster's lifecycle and operator changes as actions (up, down, rolling restart,
                       scale out and in)
``probes``             its probes
``scale``              adding and removing a node
``control``            the control that brings the cluster up for a run and down after it
``ownership``          whose a cluster is: a run stops or purges only a cluster made for runs
=====================  ======================================================================================
"""
