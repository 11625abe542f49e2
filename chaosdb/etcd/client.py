"""etcd v3 JSON gateway client: members, leader, health.

etcd >= 3.4 serves the gRPC API as JSON under ``/v3/`` on the client URL
(``POST /v3/maintenance/status``, ``POST /v3/cluster/member/list``) and a plain
``GET /health``. Member and leader ids are uint64 and come back as decimal
strings; they are kept as strings here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.http import HttpError, request_json

__all__ = ["EtcdClient", "EtcdMember"]


@dataclass
class EtcdMember:
    id: str
    name: str
    client_urls: list[str]
    peer_urls: list[str]


class EtcdClient:
    """Talks to an etcd cluster through any of its client URLs."""

    def __init__(self, urls: list[str], timeout: float = 2.0) -> None:
        if not urls:
            raise ChaosDBError("no etcd URL configured: set configuration 'etcd_urls'")
        self.urls = [u.rstrip("/") for u in urls]
        self.timeout = timeout

    def status(self, url: str) -> dict[str, Any]:
        """``/v3/maintenance/status`` of the member serving *url*."""
        return request_json("POST", f"{url}/v3/maintenance/status", {}, timeout=self.timeout).json() or {}

    def health(self, url: str) -> bool:
        try:
            body = request_json("GET", f"{url}/health", timeout=self.timeout).json() or {}
        except HttpError:
            return False
        return str(body.get("health")).lower() == "true"

    def members(self) -> list[EtcdMember]:
        last: Exception | None = None
        for url in self.urls:
            try:
                body = request_json("POST", f"{url}/v3/cluster/member/list", {}, timeout=self.timeout).json()
            except HttpError as exc:
                last = exc
                continue
            return [
                EtcdMember(
                    id=str(m.get("ID", "")),
                    name=m.get("name", ""),
                    client_urls=list(m.get("clientURLs", [])),
                    peer_urls=list(m.get("peerURLs", [])),
                )
                for m in (body or {}).get("members", [])
            ]
        raise ChaosDBError(f"no etcd member answered ({', '.join(self.urls)}): {last}")

    def leader_id(self) -> str | None:
        """Id of the Raft leader as seen by the first member that answers with one."""
        for url in self.urls:
            try:
                leader = str(self.status(url).get("leader", "0"))
            except HttpError:
                continue
            if leader and leader != "0":
                return leader
        return None

    def overview(self) -> dict[str, Any]:
        """Every configured URL with health, member id and the leader each member sees (asked in parallel)."""
        rows: dict[str, dict[str, Any]] = {}

        def ask(url: str) -> None:
            row: dict[str, Any] = {"url": url, "reachable": False, "healthy": False}
            try:
                st = self.status(url)
                row.update(
                    reachable=True,
                    member_id=str(st.get("header", {}).get("member_id", "")),
                    leader_id=str(st.get("leader", "")),
                    raft_term=int(st.get("raftTerm", 0) or 0),
                    version=st.get("version", ""),
                    db_size=int(st.get("dbSize", 0) or 0),
                )
                row["healthy"] = self.health(url)
                row["is_leader"] = row["member_id"] == row["leader_id"] and row["leader_id"] not in ("", "0")
            except HttpError as exc:
                row["error"] = str(exc)
            rows[url] = row

        threads = [threading.Thread(target=ask, args=(u,)) for u in self.urls]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return {"members": [rows[u] for u in self.urls]}
