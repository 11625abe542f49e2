"""How every figure of a run's report is defined, printed at the end of the report itself (``report.md`` and
``report.html``, section "How the numbers are defined"): a reader who installed the package alone has no README
and no docs folder, so the report carries its own definitions, each with the ``metrics.json`` key that holds the
figure."""

from __future__ import annotations

__all__ = ["DEFINITIONS", "DEFINITIONS_TITLE"]

DEFINITIONS_TITLE = "How the numbers are defined"

#: (figure, its key in metrics.json, definition)
DEFINITIONS: tuple[tuple[str, str, str], ...] = (
    ("baseline / impact", "baseline, impact",
     "baseline: transactions that started after the load's warm-up and completed before the first fault; impact: "
     "transactions that completed from the first fault to the end of the run. Latency statistics are of successful "
     "transactions (nearest-rank percentiles); throughput is commits per second; pauses of the load for an integrity "
     "check are left out of both"),
    ("recovery from the fault", "recovery.duration_s",
     "how long users were disturbed after the fault hit: from the start of the first disturbed transaction (a run of "
     "5 in a row slower than the baseline mean + 2σ, or failed; longer runs when the healthy baseline itself has "
     "such runs) to the start of the first healthy one after the last disturbed run, ruled from the first fault up "
     "to the restore (whatever ended the first fault), or through it when the disturbance went on"),
    ("clients saw it for", "recovery.client_visible_s",
     "the same disturbance until its last transaction came back to the client"),
    ("after the restore", "recovery.after_restore",
     "the same rule from the restoring action on (a restarted node rejoining); when the restore came during the "
     "fault's disturbance, its dip is part of that disturbance"),
    ("later disturbances", "recovery.disturbances",
     "every further disturbance, each found after the one before had ended, with the last fault or restore that "
     "started before it"),
    ("no commit for", "recovery.unavailability_s",
     "the longest span after the first fault in which no transaction committed (pauses of the load left out)"),
    ("back to 95 % of baseline throughput", "recovery.time_to_baseline_throughput_s, throughput_recovery",
     "seconds from the first fault until a 5 s window (sliding by 1 s) after the worst one committed at least 95 % "
     "of the baseline's throughput; when none did, the report says throughput did not recover and what it ran at "
     "after the faults and the recovery ended"),
    ("availability", "availability, degradation.availability",
     "time-based: the share of the slices of time (1 s; longer when the baseline commits fewer than 20 transactions "
     "a second) from the first fault to the end in which the database committed at least half the baseline's rate; "
     "the same measure over the baseline is given beside it. It cannot read 100 % while throughput collapsed: a "
     "throughput drop of D leaves at most (1 − D) / 0.5 of the slices available"),
    ("attempts that succeeded", "degradation.success_ratio",
     "successful attempts / all attempts of the impact; closed-loop clients held by a stalled database send few "
     "attempts, so this share can stay near 100 % through an outage: read it with the availability"),
    ("throughput drop, p99 increase", "degradation.throughput_pct, degradation.p99_increase_pct",
     "the impact's throughput and p99 latency against the baseline's"),
    ("fault in effect", "fault_spans",
     "from the fault's injection to whatever ended it first: a rollback or restoring action that says it undid "
     "that fault or acted on its node, its timer for a fault with a duration, else the first restoring action "
     "after it; 'ended by' names which"),
    ("database events", "timeline_events, events",
     "what the database said about itself (leader lost or elected, timeline or term changed, members left or "
     "rejoined, replicas caught up), as the run's observer saw it every half second; each numbered line of the "
     "timeline is one row of the table of events, with the same number, time and words; '±' is the time since the "
     "observer's previous answer (the change happened in between)"),
    ("time to each effect", "effects",
     "from the first fault, the first time each effect was seen: a member left, the leader was lost, a new leader "
     "was elected, the first commit after that election, the member rejoined, the replicas caught up"),
    ("tolerance", "verdict.hypothesis",
     "what a probe of the steady-state hypothesis had to return to hold, as Chaos Toolkit checks it: a range "
     "includes both ends"),
)
