"""CockroachDB: node status through SQL, HTTP or the ``cockroach`` CLI, normalised to one record shape.

``records`` parses and normalises what each channel returns; ``channels`` talks to a cluster
(SQL via psycopg, HTTP via the DB Console port, CLI locally or through a prefix such as
``kubectl exec``); ``probes`` are the Chaos Toolkit probes.
"""
