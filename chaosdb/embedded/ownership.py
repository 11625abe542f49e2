"""Whose an embedded cluster is: a run stops or purges only a cluster made for runs, never a person's.

A cluster records who created it (``cluster.json``'s ``created_by``): ``chaosdb cluster up`` (a person's cluster,
with their data), a run (``chaos run`` with the embedded-cluster control) or a game day. When a run's control starts
its cluster it decides once, and says at the start, what it will do afterwards:

===============================================  ==============================================================
the cluster                                       after the run
===============================================  ==============================================================
created by this run                               ``down_after`` / ``purge`` as the experiment says
made by an earlier run that is gone, or a game    ``down_after`` / ``purge`` as the experiment says (made for
day                                               runs; said at the start)
being used by another live run                    left as it is (that run's)
a person's (``chaosdb cluster up``, or older      left running whatever ``down_after`` / ``purge`` say; stopped
than this record), running when the run began     again, its data kept, when it was stopped before the run
===============================================  ==============================================================
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaosdb.core.processes import start_time
from chaosdb.embedded.processes import node_processes
from chaosdb.embedded.state import STATE_FILE, load_layout

__all__ = ["Ownership", "this_run", "is_running", "decide"]


def this_run(by: str = "run") -> dict[str, Any]:
    """The ``created_by`` record of a cluster this process creates (*by*: ``run`` or ``gameday``)."""
    pid = os.getpid()
    return {"by": by, "pid": pid, "start": start_time(pid), "at": round(time.time(), 3)}


def is_running(directory: Path) -> bool:
    """Whether any process of the cluster in *directory* runs (no cluster there: False)."""
    if not (directory / STATE_FILE).exists():
        return False
    try:
        layout = load_layout(directory)
    except Exception:  # noqa: BLE001 - an unreadable cluster counts as not running; up() says why
        return False
    return any(node_processes(n.path, n.data_dir) for n in layout.nodes)


@dataclass(frozen=True)
class Ownership:
    """What a run may do to its cluster when it ends."""

    name: str
    may_take_down: bool  # down_after / purge apply
    stop_again: bool  # a person's cluster the run found stopped: stopped again afterwards, data kept
    sentence: str  # said at the start of the run

    def as_dict(self) -> dict[str, Any]:
        """For the journal."""
        return {"cluster": self.name, "may_take_down": self.may_take_down, "stop_again": self.stop_again,
                "why": self.sentence}


def _alive(record: dict[str, Any]) -> bool:
    pid = record.get("pid")
    return isinstance(pid, int) and pid > 0 and start_time(pid) == record.get("start")


def decide(name: str, created: bool, created_by: dict[str, Any], was_running: bool, down_after: bool,
           purge: bool) -> Ownership:
    """What the run may do to cluster *name* afterwards (see the module's table), with the sentence that says so."""
    flags = " and ".join(f for f, on in (("down_after", down_after), ("purge", purge)) if on)
    afterwards = ("stopped" + (" and purged" if purge else "") + " after the run") if down_after else \
        "left running after the run (down_after is false)"
    by, pid = created_by.get("by"), created_by.get("pid")
    if created:
        return Ownership(name, True, False, f"cluster {name} was created by this run: it is {afterwards}")
    if by == "run" and pid == os.getpid() and created_by.get("start") == start_time(os.getpid()):
        return Ownership(name, True, False, f"cluster {name} was created by this run: it is {afterwards}")
    if by == "run" and _alive(created_by):
        return Ownership(name, False, False, f"cluster {name} is being used by another run (process {pid}): this "
                                             f"run leaves it as it is afterwards{_ignored(flags)}")
    if by in ("run", "gameday"):
        origin = "a game day" if by == "gameday" else f"an earlier run (process {pid}, gone)"
        return Ownership(name, True, False, f"cluster {name} was made for runs by {origin}: it is {afterwards}")
    origin = "'chaosdb cluster up'" if by == "command" else "someone before this run (no record of a run)"
    if was_running:
        return Ownership(name, False, False, f"cluster {name} existed before this run (created by {origin}): this "
                                             f"run uses it and leaves it running{_ignored(flags)}")
    return Ownership(name, False, True, f"cluster {name} existed before this run (created by {origin}) and was "
                                        f"stopped: this run starts it and stops it again afterwards, its data "
                                        f"kept{_ignored(flags)}")


def _ignored(flags: str) -> str:
    return f" ({flags}: only for a cluster a run creates)" if flags else ""
