"""What chaos-daemon can carry out on the nodes of a cluster whose kernel is this machine's, said before an object
is created.

On a cluster whose API server is on this machine's loopback and that has a real node of the pack's local
Kubernetes (label ``chaosdb.io/node=real``: its pods share this kernel; kwok's fake pods run nothing, so objects
aimed at them are only admitted, never injected, and are not refused), a NetworkChaos that needs the netem qdisc (delay, loss, duplicate, corrupt, netem) cannot be
injected when this kernel has no netem: chaos-daemon would fail in the pod's network namespace and the controller
retry it again and again, with the fault recorded as neither in nor out. IOChaos needs ``toda`` in chaos-daemon's
image, which the local cluster's image does not carry. Both are refused here, before anything is created, with the
reason; what works instead is named. Clusters elsewhere are the user's: their kernels and images are not known here
and nothing is refused.
"""

from __future__ import annotations

from typing import Any, Callable
from urllib.parse import urlsplit

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.netem import NO_NETEM, netem_available

__all__ = ["NETEM_NETWORK_ACTIONS", "refuse_what_this_kernel_cannot", "is_local_api"]

#: NetworkChaos actions carried out with tc netem
NETEM_NETWORK_ACTIONS = frozenset({"delay", "loss", "duplicate", "corrupt", "netem"})


def is_local_api(server: str) -> bool:
    """Whether the API server URL is on this machine's loopback (a cluster whose nodes share this kernel)."""
    host = urlsplit(server if "://" in server else f"https://{server}").hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def refuse_what_this_kernel_cannot(obj: dict[str, Any], server: str, has_real_node: Callable[[], bool]) -> None:
    """Refuse *obj* (a chaos object about to be created on the cluster at *server*) when its nodes share this
    machine's kernel (*has_real_node*: whether the cluster has a real node of the local Kubernetes, asked only for
    a kind that could be refused) and that kernel or the local chaos-daemon image cannot carry it out."""
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    could_refuse = kind == "IOChaos" or (kind == "NetworkChaos" and spec.get("action") in NETEM_NETWORK_ACTIONS)
    if not could_refuse or not is_local_api(server) or not has_real_node():
        return
    name = (obj.get("metadata") or {}).get("name")
    if kind == "NetworkChaos" and spec.get("action") in NETEM_NETWORK_ACTIONS and not netem_available():
        raise ChaosDBError(f"NetworkChaos {name} ({spec['action']}) refused before it was created: the local "
                           f"cluster's pods run on this machine, and {NO_NETEM}. What works here: NetworkChaos "
                           "partition and bandwidth (tbf), StressChaos, PodChaos, TimeChaos")
    if kind == "IOChaos":
        raise ChaosDBError(f"IOChaos {name} refused before it was created: it needs toda in chaos-daemon's image, "
                           "which the local cluster's image does not carry. What works here: NetworkChaos "
                           "partition and bandwidth, StressChaos, PodChaos, TimeChaos")
