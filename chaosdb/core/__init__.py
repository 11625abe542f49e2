"""Shared building blocks every other package may use; core imports nothing above it and finds the plug-ins by
convention (``plugins``).

What is in it:

* ``adapters``: database adapters, found by convention: which node has a role now
* ``arguments``: Checking an activity's argument values before anything runs
* ``binaries``: Finding the server binaries a local cluster runs (``pd-server``, ``pd-simulator``, ...)
* ``chaosd``: The API of chaosd, Chaos Mesh's agent for physical and virtual machines (``chaosd server``)
* ``claims``: A run owns the folders it writes (samples, report)
* ``clusterkinds``: Local cluster kinds, found by convention
* ``commands``: Running external commands (CLIs such as ``cockroach`` or ``kubectl``)
* ``console``: Small things every ``chaosdb`` command prints the same way
* ``dbevents``: What a database says about itself during a run, and the events between two of its answers
* ``detach``: Child processes that run this package's modules (reverters, proxies, Locust)
* ``engines``: Fault engines, found by convention
* ``errors``: Errors raised by chaosdb
* ``faultrecords/``: fault records as a service for every engine: records, scopes, the detached reverter, residue
  and cleanup, each engine's revert handler found by convention
* ``extras``: optional extras: which one a part needs, said in one line when it is missing
* ``health``: One rule for boolean health probes
* ``home``: Where chaosdb keeps its state on this machine
* ``http``: JSON over HTTP(S) with :mod:`requests`
* ``local_cluster``: a local cluster's endpoints as data (the ``endpoints.json`` its launcher writes), read by the
  clients a configuration naming a cluster falls back to
* ``libpq``: TLS and the password of a PostgreSQL connection, from the same keys as every other client (:mod:`chaosdb.core.tls`)
* ``netem``: Whether this machine's kernel has the netem qdisc (delay, loss, corruption, duplication in ``tc``)
* ``pki``: A private CA for the clusters this pack starts itself, made with the ``openssl`` command
* ``plugins``: Plug-ins found by convention, the way Patroni finds its DCS modules
* ``podnames``: Which Kubernetes pod stands behind a database node
* ``processes``: Processes on this machine
* ``prometheus``: the Prometheus text format as plain samples (prometheus_client's parser)
* ``redact``: Keep secrets out of anything a person or a journal sees
* ``results``: The one shape of an action's result, as the journal records it
* ``servers``: Starting the server processes of a local cluster and waiting for them (PD, Kubernetes, ...)
* ``settings``: One name per setting
* ``signals``: The signals a process kill may send, by name, wherever the process runs (this machine, a pod)
* ``stats``: Statistics shared by the live probes and the reporter
* ``target_model``: The typed model of a role target: its keys and their types, checked at any depth
* ``targets``: Choosing fault targets by role when an action runs, and the quorum safety rule
* ``timeutil``: Wall-clock timestamps as they appear in fault records and journals
* ``tls``: TLS and credentials of a client, named alike for every database
"""
