"""Probes over the operation history the load recorded (workloads ``list-append``, ``rw-register``,
``register-etcd``), for hypotheses after the method:

* ``history_anomalies``: the checker's whole answer (:func:`chaosdb.history.check.check_history`): ``valid``,
  ``anomaly_types``, ``anomalies`` with examples explained in words, ``info`` (operations whose outcome is unknown),
  the servers that answered each example's operations;
* ``history_is_valid``: true when the history shows no anomaly the consistency model forbids (and, for a register,
  is linearizable); false when it does, or when the checker gave up (``unknown``).

The history is read from the running load's samples folder (or ``samples``, or configuration
``chaosdb_samples_dir``) as it stands: operations still in flight count as ``info``. The checker never talks to the
database, so the verdict can be rebuilt from the run's folder alone (``chaosdb history check FOLDER``).
"""


import logging
from typing import Any

from chaoslib.types import Configuration

from chaosdb.core.arguments import check_arguments, choice, number
from chaosdb.core.errors import ChaosDBError
from chaosdb.history.check import MODELS, check_history
from chaosdb.history.consistency import canonical_model
from chaosdb.load import state as load_state

__all__ = ["history_anomalies", "history_is_valid"]

log = logging.getLogger("chaosdb")


def history_anomalies(model: str = "", consistency_model: str = "serializable", samples: str = "",
                      max_examples: int = 4, configuration: Configuration = None) -> dict[str, Any]:
    """The load's history checked as *model* (''/auto: found from its operations) against *consistency_model*
    (Elle's names: read-committed, repeatable-read, snapshot-isolation, serializable, strict-serializable; a
    register is checked for linearizability): ``valid`` (true, false, or ``"unknown"``), ``anomaly_types``,
    ``anomalies`` (a few examples of each, explained), ``info``, ``operations``."""
    location = load_state.samples_dir_for(samples, configuration)
    result = check_history(location, model or None, consistency_model, max_examples=int(max_examples))
    result["history"] = str(location)
    return result


def history_is_valid(model: str = "", consistency_model: str = "serializable", samples: str = "",
                     configuration: Configuration = None) -> bool:
    """Whether the load's history shows no anomaly *consistency_model* forbids (see :func:`history_anomalies`);
    the anomalies found are logged with their first explanation."""
    result = history_anomalies(model, consistency_model, samples, max_examples=1, configuration=configuration)
    if result["valid"] is not True:
        for name, examples in (result.get("anomalies") or {}).items():
            first = examples[0] if isinstance(examples, list) and examples else {}
            log.warning("history anomaly %s: %s", name, first.get("explanation", "") if isinstance(first, dict)
                        else first)
    return result["valid"] is True


def _consistency_model(value: Any) -> None:
    try:
        canonical_model(value)
    except ValueError as exc:
        raise ChaosDBError(f"consistency_model: {exc}") from None


check_arguments(globals(), model=choice("model", "", *MODELS), consistency_model=_consistency_model,
                max_examples=number("max_examples", 1, maximum=1000, integer=True))
