"""Patroni / PostgreSQL: REST and SQL clients, probes and actions for any Patroni cluster.

What is in it:

* ``actions``: Actions for any Patroni-managed PostgreSQL cluster
* ``adapter``: Patroni's answer to "which node has this role"
* ``endpoints``: Where a Patroni/PostgreSQL/etcd cluster is, from Chaos Toolkit configuration and secrets
* ``patroni``: Patroni REST API client (any Patroni >= 2 cluster)
* ``probes``: Probes for any Patroni-managed PostgreSQL cluster
* ``sql``: SQL on the primary with psycopg 3
"""
