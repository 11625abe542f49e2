"""fakedb's adapter: a boss and minions by shard, its processes given by the target (``pids``)."""

from __future__ import annotations

from typing import Any

from chaosdb.core.adapters import DatabaseAdapter, ResolvedNode
from chaosdb.core.errors import ChaosDBError


class FakeAdapter(DatabaseAdapter):
    name = "fakedb"
    roles = ("boss", "minion")

    def check(self, role: str, target: dict[str, Any]) -> None:
        if role == "minion" and "shard" not in target:
            raise ChaosDBError("a minion needs its shard")

    def resolve(self, role: str, target: dict[str, Any], configuration: dict[str, Any],
                secrets: dict[str, Any] | None) -> ResolvedNode:
        pod = "fake-0" if role == "boss" else f"fake-{target['shard']}"
        return ResolvedNode(name=pod, pod=pod, address=f"{pod}.fake.db.svc:1", detail={"asked": role})

    def local_pids(self, node: ResolvedNode, target: dict[str, Any]) -> list[int]:
        return [int(configuration_pid) for configuration_pid in target.get("pids", [])]


ADAPTER = FakeAdapter()
