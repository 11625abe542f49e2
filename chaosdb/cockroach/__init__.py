"""CockroachDB: node status through SQL, HTTP or the ``cockroach`` CLI, normalised to one record shape.

``records`` parses and normalises what each channel returns; ``channels`` talks to a cluster
(SQL via psycopg, HTTP via the DB Console port, CLI locally or through a prefix such as
``kubectl exec``); ``probes`` are the Chaos Toolkit probes.
What is in it:

* ``actions``: CockroachDB actions
* ``adapter``: CockroachDB's answer to "which node has this role"
* ``node_processes``: The ``cockroach start`` process serving a node on this machine (a local cluster of them is :mod:`chaosdb.clusters.cockroach`)
* ``placement``: where nodes run (pods or local processes) and how each is killed, kept and restarted there
* ``ranges``: Leaseholders and ranges
* ``sql``: SQL for CockroachDB, built safely, and the CLI's tables parsed (``channels.run_sql`` runs it over the SQL channel or the CLI)
* ``targets``: Which CockroachDB node an action hits, decided when it runs
* ``version``: CockroachDB versions and what each can do (CockroachDB's release notes and documentation)
"""
