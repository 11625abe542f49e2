"""Fault records as a service, for every engine and knowing none: each fault any engine injects on a machine is a
record written before anything changes, so that a rollback, a timer, the faults control or ``chaosdb faults
cleanup`` undoes it from any process. What undoes each part of a record is the revert handler of the engine that
made it, found by convention like the adapters (a ``revert_handler`` module defining ``REVERT_HANDLER`` in an
engine's package).

What is in it:

* ``records``: one JSON record per active fault, where records live, which of them a run may touch (``RunScope``)
* ``handlers``: the revert handlers of the engines, found by convention (``RevertHandler``)
* ``lifecycle``: inject (record first, then the engine's steps, then the timer), revert, revert_all, timer results
* ``reverter``: the detached process that reverts a timed fault at its deadline
* ``sweep``: ``residue`` and ``cleanup``: records, helper processes and what each engine left
"""
