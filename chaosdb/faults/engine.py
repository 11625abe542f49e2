"""Inject and revert local faults; find and remove everything they left.

Every injection follows the same order: check that the host can do it (raise
before anything changes), write the fault's record, make each change and add it
to the record, then (with a duration) start a detached reverter. If any step
fails, what was done is reverted before the error is raised. ``revert`` works
from the record alone, in any process, any number of times.
"""


from chaosdb.faults.cgroup_faults import inject_cpu_quota, inject_memory_limit
from chaosdb.faults.lifecycle import (
    FAULT_KINDS,
    NETWORK_KINDS,
    PROXY_MARK,
    ProcessGroup,
    fault_stats,
    keep_timer_result,
    revert,
    revert_all,
    take_timer_results,
)
from chaosdb.faults.network_faults import inject_network
from chaosdb.faults.process_faults import inject_suspend, signal_processes
from chaosdb.faults.proxy_delay import inject_proxy_delay
from chaosdb.faults.sweep import cleanup, residue

#: the engine's parts, one job each: lifecycle (record, inject, revert, timers), cgroup_faults, network_faults,
#: proxy_delay, sweep (residue, cleanup); this module is where callers find them
__all__ = [
    "ProcessGroup", "inject_cpu_quota", "inject_memory_limit", "inject_suspend", "signal_processes", "inject_network", "inject_proxy_delay",
    "revert", "revert_all", "cleanup", "residue", "PROXY_MARK", "fault_stats", "FAULT_KINDS",
    "NETWORK_KINDS", "keep_timer_result", "take_timer_results",
]
