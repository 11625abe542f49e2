"""TPC-C-like workload: schema, loader, the five transactions, consistency checks.

What is in it:

* ``consistency``: the twelve consistency conditions of clause 3.3.2, checked after the chaos
* ``loader``: Populate a TPC-C database (clause 4.3.3.1)
* ``rand``: TPC-C random functions (spec clauses 2.1.6, 4.3.2, 5.2.4, 5.2.5)
* ``schema``: The nine TPC-C tables (clause 1.3) in SQL that PostgreSQL and CockroachDB both accept
* ``terminal``: One TPC-C terminal
* ``transactions``: The five TPC-C transactions (clauses 2.4 - 2.8) on a psycopg 3 connection
"""
