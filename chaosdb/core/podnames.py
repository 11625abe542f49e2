"""Which Kubernetes pod stands behind a database node's address (StatefulSet DNS names)."""

from __future__ import annotations

import re

__all__ = ["statefulset_pod"]

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
