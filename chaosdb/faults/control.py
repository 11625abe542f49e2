"""Chaos Toolkit control: after the experiment, revert every local fault this run injected.

Rollbacks do this normally; the control is the safety net for runs that end
another way (a failed action after a successful injection, Ctrl-C between an
action and its rollback). Faults of other runs are left alone.

    "controls": [{"name": "chaosdb-faults",
                  "provider": {"type": "python", "module": "chaosdb.faults.control"}}]
"""

import logging
from typing import Any

from chaosdb.core.arguments import with_argument_checks
from chaosdb.core.faultrecords.records import RunScope
from chaosdb.faults import engine

__all__ = ["validate_control", "after_experiment_control"]

logger = logging.getLogger("chaostoolkit")


def after_experiment_control(context: Any = None, state: Any = None, **kwargs: Any) -> None:
    """After the run, whatever happened: revert every fault this run injected and did not revert (timed faults are left
    to their timers)."""
    try:
        done = engine.revert_all(scope=RunScope.this_run(), include_timed=False)
    except Exception as exc:  # never break the run's own ending; say what to do
        logger.error("chaosdb: could not revert this run's local faults (%s): run 'chaosdb faults cleanup'", exc)
        return
    if done:
        logger.warning("chaosdb: reverted %d local fault(s) the experiment left active: %s", len(done),
                       ", ".join(f"{d['kind']} {d['id']}" for d in done))


def _no_check(control: dict[str, Any]) -> None:
    """Nothing beyond the arguments to check: this control needs no extra."""


#: ``chaos validate`` refuses arguments this control does not take
validate_control = with_argument_checks(_no_check, __name__)
