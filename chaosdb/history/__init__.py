"""Operation histories: recorded while a run goes, checked for anomalies afterwards (no database involved).

What is in it:

* ``recording``: histories written while the load runs (Jepsen's form, JSON Lines) and read back
* ``check``: one entry to the checkers, the model found from the operations
* ``command``: ``chaosdb history check`` and ``chaosdb history merge``
* ``list_append``: Elle's checker of appends to lists and reads of them
* ``rw_register``: Elle's checker of writes and reads of registers
* ``transactions``: a history's events paired into transactions
* ``graph``: the dependency edges between transactions, and the real-time and process orders
* ``cycles``: finds and names the cycles
* ``analysis``: the inference and the cycle search put together
* ``results``: the verdict
* ``consistency``: which anomalies each consistency model forbids
* ``lost_appends``: acknowledged appends a later read misses, one sentence each
* ``linearizable``: linearizability of single-key registers (Wing & Gong with Lowe's memoisation, per key)
"""
