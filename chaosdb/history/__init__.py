"""Operation histories: recorded while a run goes, checked for anomalies afterwards.

What is in it:

* ``recording``: histories written while the load runs (Jepsen's form, JSON Lines) and read back
"""
