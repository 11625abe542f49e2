"""Inject and revert local faults; find and remove everything they left.

Every injection follows the same order: check that the host can do it (raise
before anything changes), write the fault's record, make each change and add it
to the record, then (with a duration) start a detached reverter. If any step
fails, what was done is reverted before the error is raised. ``revert`` works
from the record alone, in any process, any number of times. The records, the
reverter, ``cleanup`` and ``residue`` are the record service's
(:mod:`chaosdb.core.faultrecords`), shared with the other engines; what this engine
undoes of a record is its revert handler (:mod:`chaosdb.faults.revert_handler`).
"""


from chaosdb.core.faultrecords.lifecycle import fault_stats, keep_timer_result, revert, revert_all, take_timer_results
from chaosdb.core.faultrecords.sweep import cleanup, residue
from chaosdb.faults.cgroup_faults import inject_cpu_quota, inject_memory_limit
from chaosdb.faults.network_faults import NETWORK_KINDS, inject_network
from chaosdb.faults.process_faults import inject_suspend, signal_processes
from chaosdb.faults.proxy_delay import PROXY_MARK, inject_proxy_delay
from chaosdb.faults.targets import ProcessGroup

#: the kinds of faults this engine injects (``revert_faults``' ``kinds``)
FAULT_KINDS = ("cpu", "memory", "suspend", *NETWORK_KINDS)

#: the engine's parts, one job each: cgroup_faults, network_faults, proxy_delay, process_faults, revert_handler; with
#: the record service's lifecycle (record, inject, revert, timers) and sweep (residue, cleanup); this module is where
#: callers find them
__all__ = [
    "ProcessGroup", "inject_cpu_quota", "inject_memory_limit", "inject_suspend", "signal_processes", "inject_network", "inject_proxy_delay",
    "revert", "revert_all", "cleanup", "residue", "PROXY_MARK", "fault_stats", "FAULT_KINDS",
    "NETWORK_KINDS", "keep_timer_result", "take_timer_results",
]
