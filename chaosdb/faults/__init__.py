"""Local fault engine: CPU and memory limits (cgroups), network faults (iptables, tc,
a latency proxy), each recorded so that a fresh process can revert it (the records are the record service's,
:mod:`chaosdb.core.faultrecords`; ``revert_handler`` is what this engine undoes of one).

==================  ==========================================================
module              job
==================  ==========================================================
``host``            what this host can do (root, cgroup version, iptables, tc,
                    netem); checked before anything is changed
``cgroups``         cgroup v1 / v2 groups for CPU quota and memory limit
``netfilter``       iptables chains and rules (tagged ``CHAOSDB-*`` / ``chaosdb:``)
``traffic``         tc htb classes on ``lo`` for bandwidth (and netem when present)
``classify``        which packets belong to "node X <-> its peers / its clients"
``conntrack``       forgets the tracked connections of a cluster's nodes, so a
                    network fault marks live connections afresh
``netproxy``        TCP proxy adding latency and jitter (``python -m``)
``engine``          inject and revert faults; ``cleanup`` and ``residue``
``revert_handler``  undo this engine's part of a record: proxies, stopped
                    processes, chains, tc classes, cgroups; its residue
``actions`` /       Chaos Toolkit activities
``probes``
``control``         reverts this run's faults after the experiment, whatever happened
==================  ==========================================================
What is in it:

* ``cgroup_faults``: CPU and memory faults
* ``network_faults``: network faults: iptables partitions and loss, tc htb bandwidth, matched by the nodes' users
* ``process_faults``: processes stopped (SIGSTOP) and continued on revert (``suspend_processes``)
* ``proxy_delay``: Latency without netem
* ``targets``: Fault targets on one machine
"""

#: this package is the fault engine called so (:mod:`chaosdb.core.engines`)
ENGINE = "host"
