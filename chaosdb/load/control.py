"""Chaos Toolkit control that runs the load for the whole experiment.

Declare it in the experiment::

    "controls": [{
      "name": "tpcc-load",
      "provider": {"type": "python", "module": "chaosdb.load.control",
                   "arguments": {"users": 8, "warmup_s": 20, "samples_dir": "reports/run1/samples"}}
    }]

* before the experiment (so before the steady-state hypothesis): starts Locust
  as a separate process (``python -m locust -f <locustfile> --headless``), waits
  until transactions commit, then ``warmup_s`` seconds (excluded from every
  statistic), then ``baseline_s`` seconds of steady load, the baseline that the
  report compares the fault's impact with (the hypothesis' windows fall in it). If the load does not start, the run is interrupted
  before anything is injected, with the load's log in the message.
* the load keeps running through the method, the after-hypothesis and the
  rollbacks;
* after the experiment, also when it failed, deviated or was interrupted
  (Ctrl-C): stops the load (SIGTERM, then SIGKILL after ``stop_timeout_s``) and
  adds ``chaosdb_load`` to the journal: settings, start / warm-up end / stop times,
  samples and Locust CSV locations, counts by outcome, pause windows.
* if ``chaos run`` itself dies, the load gets SIGTERM from the kernel
  (parent-death signal) and ``max_run_s`` bounds it anyway.

The DSN comes from ``dsn`` (argument), else secret ``load_dsn`` (declare the
secret scope in the experiment), else ``CHAOSDB_LOAD_DSN``, else the embedded
cluster named by configuration ``chaosdb_cluster``/``chaosdb_cluster_dir``. It is
handed to Locust in its environment, never on its command line, and never
written to the journal. With ``"only_with_dsn": true`` a run where none of the first three is given has no
load (the Kubernetes experiments: a load and its figures where the user gives a DSN), instead of an error.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

from chaosdb.core.arguments import with_argument_checks
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.extras import control_validator
from chaosdb.core.tls import as_bool
from chaosdb.experiment import refusals
from chaosdb.experiment.checks import refuse_bad_arguments
from chaosdb.experiment.context import closes_run_context, end_run, run_context
from chaosdb.experiment.refusals import refused, stops_the_run
from chaosdb.load import state as load_state
from chaosdb.load.dsn import etcd_endpoints, etcd_tls, resolve_dsn
from chaosdb.load.options import ARGUMENTS, LoadOptions
from chaosdb.load.runner import LOCUSTFILES, OUTPUT_FOLDER, finish_load, start_load, stop_load

__all__ = ["validate_control", "before_experiment_control", "after_experiment_control", "cleanup_control",
           "finish_load", "before_hypothesis_control", "before_method_control", "before_activity_control",
           "after_method_control", "before_rollback_control",
           # where they were before the load's modules were split (the runner, the DSN)
           "start_load", "stop_load", "LOCUSTFILES", "OUTPUT_FOLDER", "etcd_endpoints", "etcd_tls"]

#: the control's own arguments, read by its hooks (every hook receives all of them); the others are the load's
#: options
CONTROL_OWN = frozenset({"only_with_dsn", "stop_timeout_s"})
#: ``chaos validate`` refuses this control when its extra is not installed
validate_control = control_validator("chaosdb.load.control", ("load",))


# --- Chaos Toolkit control hooks (every hook receives the provider's arguments) -----------------


def before_hypothesis_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The progress line says the hypothesis is being checked."""
    load_state.progress().phase = "steady-state hypothesis"


def before_method_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The progress line says the method runs."""
    load_state.progress().phase = "method"


def before_activity_control(context: dict[str, Any], **kwargs: Any) -> None:
    """Say the activity in the progress lines; note when each action starts (the outage probes of
    :mod:`chaosdb.report.probes` measure from the first one while the run goes on)."""
    if isinstance(context, dict) and context.get("name"):
        load_state.progress().phase = f"{context.get('type', 'activity')}: {context['name']}"
        record = load_state.current()
        if context.get("type") == "action" and record.get("running"):
            record.setdefault("actions", []).append(
                {"name": str(context["name"]), "func": str((context.get("provider") or {}).get("func", "")),
                 "start_ts": round(time.time(), 6)})


def after_method_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The progress line says the method is over."""
    load_state.progress().phase = "after the method"


def before_rollback_control(context: dict[str, Any], **kwargs: Any) -> None:
    """The progress line says the rollbacks run."""
    load_state.progress().phase = "rollbacks"



@stops_the_run("chaosdb load control")
def before_experiment_control(context: dict[str, Any], configuration: dict[str, Any] | None = None,
                              secrets: dict[str, Any] | None = None, only_with_dsn: bool = False,
                              **kwargs: Any) -> None:
    """Before the run: refuse bad arguments, then start the load (warm-up and baseline included) so the hypothesis and
    the method run under it. Its stop is the run's first teardown step: whichever control needs the load over (the
    cluster going down, the report) asks the run context, and it runs once."""
    refuse_bad_arguments(context, configuration, secrets)  # nothing starts on bad input
    _register_stop(run_context(context), kwargs.get("stop_timeout_s", 20.0))
    try:
        options = LoadOptions.from_arguments({k: v for k, v in kwargs.items() if k not in CONTROL_OWN})
    except ChaosDBError as exc:
        raise refused(f"chaosdb load control: {exc}") from None
    if as_bool(only_with_dsn, default=False):  # e.g. the Kubernetes experiments: a load (and figures) where a DSN is given
        try:
            resolve_dsn(options.dsn, configuration, secrets, options.workload)
        except ChaosDBError:
            logging.getLogger("chaostoolkit").info("chaosdb load control: no DSN given (dsn, a secret load_dsn or CHAOSDB_LOAD_DSN): this run "
                        "has no load, and its report no degradation or recovery figures")
            return
    try:
        start_load(options, configuration=configuration, secrets=secrets)
    except ChaosDBError as exc:
        raise refused(f"chaosdb load control: {exc}") from None


def _register_stop(ctx: Any, stop_timeout_s: Any, replace: bool = True) -> None:
    """The load's teardown step: stopped (SIGTERM, SIGKILL after *stop_timeout_s*) and recorded in the journal."""
    ctx.register_teardown("load", functools.partial(finish_load, stop_timeout_s=stop_timeout_s), replace)


@closes_run_context
def after_experiment_control(context: dict[str, Any], state: dict[str, Any] | None = None,
                             stop_timeout_s: float = 20.0, **kwargs: Any) -> None:
    """Stop the load and record it in the journal (a refused run: journalled as refused)."""
    refusals.record_in(state)
    ctx = run_context()
    _register_stop(ctx, stop_timeout_s, replace=False)  # a load started without this control's before hook too
    ctx.run_teardown(through="load", state=state)


def cleanup_control() -> None:
    """The run is over, however it ended: the run context's teardown has run (the load is stopped)."""
    end_run()
    stop_load()


#: the control's arguments that are the load's options (:class:`chaosdb.load.options.LoadOptions`, their rules), checked
#: with the configuration substituted before any control starts anything
#: (:func:`chaosdb.experiment.checks.experiment_problems`); the control's own arguments are its hooks' (``CONTROL_OWN``)
CONTROL_ARGUMENTS = ARGUMENTS
validate_control = with_argument_checks(validate_control, __name__)

