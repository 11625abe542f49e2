"""LitmusChaos probes: the ChaosResult of an engine's experiment."""

from typing import Any, Dict

from chaoslib.types import Configuration, Secrets

from chaosdb.core.arguments import check_arguments
from chaosdb.k8s import api
from chaosdb.litmus.results import GROUP, VERSION, result_name, summarise_result

__all__ = ["chaos_result", "probe_success_percentage"]


def chaos_result(engine: str, experiment: str, namespace: str = "", configuration: Configuration = None,
                 secrets: Secrets = None) -> Dict[str, Any]:
    """The ChaosResult ``<engine>-<experiment>``: phase, verdict (Awaited/Pass/Fail/Stopped/Error),
    ``probe_success_percentage`` (number, null while Awaited), probe verdicts, run history."""
    ns = api.namespace_of(configuration, namespace)
    custom = api.custom_objects(configuration, secrets)
    name = result_name(engine, experiment)
    obj: Any = api.call_json(f"reading ChaosResult {ns}/{name}", custom.get_namespaced_custom_object, GROUP,
                             VERSION, ns, "chaosresults", name)
    return summarise_result(obj)


def probe_success_percentage(engine: str, experiment: str, namespace: str = "",
                             configuration: Configuration = None, secrets: Secrets = None) -> float:
    """``probeSuccessPercentage`` as a number (-1 while the verdict is still Awaited)."""
    pct = chaos_result(engine, experiment, namespace, configuration, secrets)["probe_success_percentage"]
    return -1.0 if pct is None else float(pct)


# argument values are checked by chaos validate and before chaos run starts (chaosdb.core.arguments)
check_arguments(globals(), extras=("k8s",))
