"""etcd v3 JSON gateway client: members, leader, health.

etcd >= 3.4 serves the gRPC API as JSON under ``/v3/`` on the client URL
(``POST /v3/maintenance/status``, ``POST /v3/cluster/member/list``) and a plain
``GET /health``. Member and leader ids are uint64 and come back as decimal
strings; they are kept as strings here.

TLS (:class:`chaosdb.core.tls.ClientTls`) covers HTTPS and client certificates. With etcd's own authentication
on, a username and password are exchanged for a token (``POST /v3/auth/authenticate``), which goes in the
``Authorization`` header of every request and is renewed when etcd says it is no longer valid.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.http import HttpError, request_json
from chaosdb.core.tls import ClientTls

__all__ = ["EtcdClient", "EtcdMember"]


@dataclass
class EtcdMember:
    id: str
    name: str
    client_urls: list[str]
    peer_urls: list[str]


class EtcdClient:
    """Talks to an etcd cluster through any of its client URLs."""

    def __init__(self, urls: list[str], timeout: float = 2.0, tls: ClientTls | None = None,
                 auth: tuple[str, str] | None = None) -> None:
        if not urls:
            raise ChaosDBError("no etcd URL configured: set configuration 'etcd_urls'")
        self.urls = [u.rstrip("/") for u in urls]
        self.timeout = timeout
        self.tls = tls
        self.auth = auth
        self._tokens: dict[str, str] = {}

    def _token(self, url: str) -> str:
        """A token for *url* from ``/v3/auth/authenticate`` (a wrong password is final: no retry)."""
        if url not in self._tokens and self.auth:
            try:
                answer = request_json("POST", f"{url}/v3/auth/authenticate",
                                      {"name": self.auth[0], "password": self.auth[1]}, timeout=self.timeout,
                                      tls=self.tls, url_key="etcd_urls").json() or {}
            except HttpError as exc:
                if exc.status is not None and "authentication failed" in exc.body:
                    raise ChaosDBError(f"etcd at {url} refused the login of {self.auth[0]!r}: check the secrets "
                                       "etcd_username and etcd_password") from None
                raise
            self._tokens[url] = str(answer.get("token") or "")
        return self._tokens.get(url, "")

    def _post(self, url: str, path: str, body: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        for attempt in (1, 2):
            token = self._token(url)
            try:
                return request_json("POST", f"{url}{path}", body, timeout=timeout or self.timeout, tls=self.tls,
                                    url_key="etcd_urls", headers={"Authorization": token} if token else None
                                    ).json() or {}
            except HttpError as exc:
                if exc.status is not None and ("invalid auth token" in exc.body or "user name is empty" in exc.body):
                    if attempt == 1 and self.auth:
                        self._tokens.pop(url, None)  # expired: log in again once
                        continue
                    raise ChaosDBError(f"etcd at {url} asks for a login: set the secrets etcd_username and "
                                       "etcd_password") from None
                raise
        raise AssertionError("unreachable")

    def status(self, url: str) -> dict[str, Any]:
        """``/v3/maintenance/status`` of the member serving *url*."""
        return self._post(url, "/v3/maintenance/status", {})

    def health(self, url: str) -> bool:
        """Whether the member at *url* says it is healthy; a TLS failure is an error, an unreachable member is not
        healthy."""
        try:
            body = request_json("GET", f"{url}/health", timeout=self.timeout, tls=self.tls).json() or {}
        except HttpError as exc:
            if exc.tls:  # not "unhealthy": this client's TLS settings are wrong, which the message says
                raise ChaosDBError(str(exc)) from None
            return False
        return str(body.get("health")).lower() == "true"

    def members(self) -> list[EtcdMember]:
        """The cluster's members, asked of the first member that answers."""
        last: Exception | None = None
        for url in self.urls:
            try:
                body = self._post(url, "/v3/cluster/member/list", {})
            except HttpError as exc:
                if exc.tls:  # a TLS setting is wrong: the other members would say the same
                    raise ChaosDBError(str(exc)) from None
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

    def _post_any(self, path: str, body: dict[str, Any], retry_s: float) -> dict[str, Any]:
        """POST to the first member that accepts. etcd refuses membership changes with 503 "unhealthy
        cluster" until its leader has been connected to a quorum for 5 s (just after a member restarted):
        those are retried for *retry_s*."""

        last: Exception | None = None
        deadline = time.monotonic() + retry_s
        while True:
            for url in self.urls:
                try:
                    return self._post(url, path, body, timeout=max(self.timeout, 5.0))
                except HttpError as exc:
                    last = exc
            if time.monotonic() > deadline or "unhealthy cluster" not in str(last):
                raise ChaosDBError(f"no etcd member accepted {path}: {last}")
            time.sleep(1.0)

    def add_member(self, peer_url: str, retry_s: float = 30.0) -> str:
        """``member add``; returns the new member's id."""
        added = self._post_any("/v3/cluster/member/add", {"peerURLs": [peer_url]}, retry_s)
        return str((added.get("member") or {}).get("ID", ""))

    def remove_member(self, member_id: str, retry_s: float = 30.0) -> None:
        """``member remove``; a member that is already gone is not an error."""
        try:
            self._post_any("/v3/cluster/member/remove", {"ID": member_id}, retry_s)
        except ChaosDBError as exc:
            if "not found" not in str(exc).lower():
                raise

    def leader_id(self) -> str | None:
        """Id of the Raft leader as seen by the first member that answers with one."""
        for url in self.urls:
            try:
                leader = str(self.status(url).get("leader", "0"))
            except HttpError as exc:
                if exc.tls:
                    raise ChaosDBError(str(exc)) from None
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
