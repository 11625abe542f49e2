"""Chaos Toolkit control: after the experiment, delete the Chaos Mesh objects and Litmus engines this run
created and did not delete.

Rollbacks do this normally; Chaos Toolkit skips them when a run is interrupted (Ctrl-C, or the SIGTERM a
CronJob's ``activeDeadlineSeconds`` sends), and that is exactly when a fault must not stay injected. Objects of
other runs are left alone (``delete_all_chaos`` removes every object the pack created, for runs that were
killed outright).

    "controls": [{"name": "chaosdb-kubernetes",
                  "provider": {"type": "python", "module": "chaosdb.k8s.control"}}]
"""

from __future__ import annotations

import logging
from typing import Any

from chaosdb.core.arguments import with_argument_checks
from chaosdb.core.engines import engine_action
from chaosdb.core.extras import control_validator
from chaosdb.k8s import created

__all__ = ["validate_control", "after_experiment_control"]

#: ``chaos validate`` refuses this control when its extra is not installed
validate_control = control_validator("chaosdb.k8s.control", ("k8s",))

logger = logging.getLogger("chaostoolkit")


def after_experiment_control(context: Any = None, state: Any = None, **kwargs: Any) -> None:
    """After the run, whatever happened: delete every chaos object and ChaosEngine this run created and did not delete.
    """
    delete_chaos = engine_action("chaosmesh", "delete_chaos")  # the engines built on this client, by name
    delete_chaos_engine = engine_action("litmus", "delete_chaos_engine")
    for kind, namespace, name, configuration, secrets in created.pending():
        try:
            if kind == "ChaosEngine":
                delete_chaos_engine(name, namespace, configuration=configuration, secrets=secrets)
            else:
                delete_chaos(kind, name, namespace, wait=True, timeout_s=120, configuration=configuration,
                             secrets=secrets)
        except Exception as exc:  # never break the run's own ending; say what to do
            logger.error("chaosdb: could not delete %s %s/%s (%s): delete it by hand or run "
                         "chaosdb.chaosmesh.actions.delete_all_chaos", kind, namespace, name, exc)
            continue
        logger.warning("chaosdb: deleted %s %s/%s that the experiment left behind", kind, namespace, name)


#: ``chaos validate`` also refuses arguments this control does not take
validate_control = with_argument_checks(validate_control, __name__)
