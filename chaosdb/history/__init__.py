"""Checkers of transactional histories for isolation anomalies, after Jepsen's Elle (no database involved).

``list_append`` checks histories of appends to lists and reads of them, ``rw_register`` histories of writes and
reads of registers. Both infer the dependencies between transactions: ``transactions`` pairs a history's events
into transactions, ``graph`` holds their dependency edges and the real-time and process orders, ``cycles`` finds
and names the cycles, ``analysis`` puts those together, ``results`` builds the verdict. ``consistency`` knows which
anomalies each consistency model forbids.
"""
