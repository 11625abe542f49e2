"""fakedb's probes."""

from typing import Any

from chaosdb.core.adapters import resolve_role_target

__all__ = ["fakedb_boss"]


def fakedb_boss(shard: int = 0, configuration: dict[str, Any] = None, secrets: dict[str, Any] = None) -> str:
    """The node that is fakedb's boss now (its adapter's answer)."""
    return resolve_role_target({"role": "fakedb-boss", "shard": shard}, configuration, secrets).name
