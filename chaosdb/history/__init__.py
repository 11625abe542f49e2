"""Operation histories: recorded while a run goes, checked for anomalies afterwards.

What is in it:

* ``check``: one entry to the checkers, the model found from the operations
* ``command``: ``chaosdb history check`` and ``chaosdb history merge``
* ``linearizable``: linearizability of single-key registers (Wing & Gong with Lowe's memoisation, per key)
* ``recording``: histories written while the load runs (Jepsen's form, JSON Lines) and read back
"""
