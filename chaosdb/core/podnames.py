"""Which Kubernetes pod stands behind a database node: its address (StatefulSet DNS names) or a map given in the
configuration (``tikv_pods``, ``patroni_pods``)."""

from __future__ import annotations

import json
import re
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["pod_map", "statefulset_pod"]

_POD = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?-\d+")


def statefulset_pod(address: str | None) -> str | None:
    """The pod behind a StatefulSet address: the first DNS label of ``<pod>.<service>.<ns>.svc...:<port>``
    (``cockroachdb-1.cockroachdb.crdb.svc.cluster.local:26257`` -> ``cockroachdb-1``); None for IP addresses
    and names that are not ``<name>-<ordinal>``."""
    if not address:
        return None
    host = address.rsplit(":", 1)[0].strip("[]") if address.count(":") <= 1 or address.startswith("[") \
        else address
    if not host or re.fullmatch(r"[\d.]+|[0-9a-fA-F:]+", host):
        return None
    label = host.split(".", 1)[0]
    return label if _POD.fullmatch(label) else None


def pod_map(configuration: dict[str, Any] | None, key: str) -> dict[str, str]:
    """The node -> pod map under *key* of the configuration: a mapping (in the experiment), or a text as an
    environment variable or ``chaos run --var`` gives it, JSON (``{"n1": "postgres-0"}``) or ``n1=postgres-0,
    n2=postgres-1``. Empty or missing: no map (node names are pod names)."""
    value = (configuration or {}).get(key)
    if not value:
        return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except ValueError as e:
                raise ChaosDBError(f"{key}: not valid JSON ({e}); give a map such as {{\"n1\": \"postgres-0\"}} "
                                   "or n1=postgres-0,n2=postgres-1") from None
            if isinstance(parsed, dict):
                return {str(k): str(v) for k, v in parsed.items()}
        else:
            pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
            if all(len(pair) == 2 and pair[0].strip() and pair[1].strip() for pair in pairs):
                return {k.strip(): v.strip() for k, v in pairs}
    raise ChaosDBError(f"{key}: expected a map of node to pod, such as {{\"n1\": \"postgres-0\"}} or "
                       f"n1=postgres-0,n2=postgres-1; got {value!r}")
