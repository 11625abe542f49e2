"""etcd v3 (through its JSON gateway): client and probes.

What is in it:

* ``adapter``: etcd's answer to "which member has this role"
* ``client``: etcd v3 JSON gateway client
* ``endpoints``: Where an etcd cluster is
* ``probes``: etcd probes: leader, members, health
* ``view``: etcd's own view of itself for a run's event log
"""
