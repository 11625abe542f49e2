"""Patroni REST API client (any Patroni >= 2 cluster).

Reads ``GET /cluster`` from the first member that answers and normalises each
member into a :class:`Member`; sends ``POST /switchover`` and ``POST /failover``
to the leader with HTTP basic auth when the REST API requires it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.http import HttpError, request_json
from chaosdb.core.tls import ClientTls

__all__ = ["PatroniClient", "Member", "REPLICA_ROLES", "HEALTHY_REPLICA_STATES"]

#: Patroni roles of nodes that follow the leader.
REPLICA_ROLES = ("replica", "sync_standby", "quorum_standby")
#: Replica states that mean "replicating" (Patroni >= 3.0 reports streaming; older: running).
HEALTHY_REPLICA_STATES = ("streaming", "running")


@dataclass
class Member:
    """One Patroni member, normalised."""

    name: str
    role: str  # leader | standby_leader | replica | sync_standby | quorum_standby
    state: str  # running | streaming | stopped | starting | crashed | ...
    host: str
    port: int
    api_url: str  # base URL of the member's REST API (without the /patroni suffix)
    timeline: int | None
    lag_bytes: int | None  # None when Patroni reports 'unknown' or the member is the leader
    is_leader: bool
    pending_restart: bool

    @property
    def is_replica(self) -> bool:
        """Whether the member replicates (a replica, sync or async standby)."""
        return self.role in REPLICA_ROLES

    def as_dict(self) -> dict[str, Any]:
        """The member as JSON."""
        return asdict(self)


def _lag(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _api_base(url: str) -> str:
    """Patroni publishes ``http://host:port/patroni``; requests go to the base URL."""
    url = url.rstrip("/")
    return url[: -len("/patroni")] if url.endswith("/patroni") else url


def parse_members(cluster_json: dict[str, Any]) -> list[Member]:
    """Patroni's ``/cluster`` answer as members: name, role, state, timeline, lag and whether it leads."""
    members = []
    for m in cluster_json.get("members", []):
        role = str(m.get("role", ""))
        is_leader = role in ("leader", "standby_leader")
        members.append(
            Member(
                name=str(m.get("name", "")),
                role=role,
                state=str(m.get("state", "")),
                host=str(m.get("host", "")),
                port=int(m.get("port", 0) or 0),
                api_url=_api_base(str(m.get("api_url", ""))),
                timeline=int(m["timeline"]) if isinstance(m.get("timeline"), int) else None,
                lag_bytes=None if is_leader else _lag(m.get("lag")),
                is_leader=is_leader,
                pending_restart=bool(m.get("pending_restart", False)),
            )
        )
    return sorted(members, key=lambda m: m.name)


class PatroniClient:
    """A Patroni cluster reached through one or more member REST URLs."""

    def __init__(self, urls: list[str], auth: tuple[str, str] | None = None, timeout: float = 3.0,
                 tls: ClientTls | None = None) -> None:
        if not urls:
            raise ChaosDBError("no Patroni REST URL configured: set configuration 'patroni_urls'")
        self.urls = [u.rstrip("/") for u in urls]
        self.auth = auth
        self.timeout = timeout
        self.tls = tls

    def _request(self, method: str, url: str, payload: Any = None, timeout: float | None = None,
                 ok: tuple[int, ...] = (200,)) -> Any:
        return request_json(method, url, payload, timeout=timeout or self.timeout, auth=self.auth, ok=ok,
                            tls=self.tls, url_key="patroni_urls")

    # reading -----------------------------------------------------------------
    def cluster(self) -> dict[str, Any]:
        """``GET /cluster`` from the first member that answers."""
        errors = []
        for url in self.urls:
            try:
                return self._request("GET", f"{url}/cluster").json() or {}
            except HttpError as exc:
                if exc.tls:  # a TLS setting is wrong: the other members would say the same
                    raise ChaosDBError(str(exc)) from None
                errors.append(str(exc))
        raise ChaosDBError("no Patroni member answered GET /cluster: " + "; ".join(errors))

    def members(self) -> list[Member]:
        """The cluster's members, as ``/cluster`` says."""
        return parse_members(self.cluster())

    def leader(self) -> Member | None:
        """The leader, None when there is none."""
        return next((m for m in self.members() if m.is_leader), None)

    def node_status(self, url: str) -> dict[str, Any]:
        """``GET /patroni`` of one member (state, role, timeline, xlog, replication)."""
        return self._request("GET", f"{url.rstrip('/')}/patroni").json() or {}

    def answers(self, url: str) -> bool:
        """Whether the member at *url* answers for itself and says it runs (``/cluster`` keeps a dead member's
        last state until its key's TTL expires)."""
        try:
            state = self.node_status(url).get("state")
        except ChaosDBError:
            return False
        return state in ("running", "streaming")

    def live_lag(self, leader_url: str, replica_url: str) -> int | None:
        """The replica's lag in bytes as the two members say it now (``/patroni``: the leader's ``xlog.location``
        minus the replica's received or replayed location, whichever is further); None when either does not say.
        ``/cluster``'s lag is what the replica last wrote to the DCS, up to one Patroni loop old: under load a
        caught-up replica shows megabytes there."""
        try:
            leader = (self.node_status(leader_url).get("xlog") or {}).get("location")
            xlog = self.node_status(replica_url).get("xlog") or {}
        except ChaosDBError:
            return None
        positions = [v for v in (xlog.get("received_location"), xlog.get("replayed_location")) if isinstance(v, int)]
        if not isinstance(leader, int) or not positions:
            return None
        return max(0, leader - max(positions))

    def health_problems(self, max_lag_bytes: int = 1048576, expected_members: int = 0) -> tuple[list[Member], list[str]]:
        """The members and what keeps the cluster from being healthy (empty: healthy): exactly one leader running,
        every replica streaming within ``max_lag_bytes`` (as the members say it now when ``/cluster``'s lag is over:
        :meth:`live_lag`), ``expected_members`` registered (when > 0), and every member answering for itself
        (``/cluster`` keeps a dead member's last state until its key's TTL expires)."""
        try:
            members = self.members()
        except ChaosDBError as exc:
            return [], [str(exc)]
        problems = []
        leaders = [m for m in members if m.is_leader and m.state == "running"]
        if len(leaders) != 1:
            problems.append(f"{len(leaders)} running leader(s)")
        if expected_members and len(members) != expected_members:
            problems.append(f"{len(members)} member(s), {expected_members} expected")
        leader_url = leaders[0].api_url if len(leaders) == 1 else ""
        for m in members:
            if m.is_leader:
                continue
            lag = m.lag_bytes
            if m.state in HEALTHY_REPLICA_STATES and (lag is None or lag > max_lag_bytes) and leader_url:
                lag = self.live_lag(leader_url, m.api_url)
            if not (m.state in HEALTHY_REPLICA_STATES and lag is not None and lag <= max_lag_bytes):
                problems.append(f"{m.name} is {m.role}/{m.state} with lag "
                                + ("unknown" if lag is None else f"{lag} bytes (at most {max_lag_bytes})"))
        if not problems:
            problems = [f"{m.name} does not answer for itself" for m in members if not self.answers(m.api_url)]
        return members, problems

    # changing ----------------------------------------------------------------
    def _post_to_leader(self, path: str, body: dict[str, Any]) -> str:
        leader = self.leader()
        targets = ([leader.api_url] if leader and leader.api_url else []) + self.urls
        last: HttpError | None = None
        for url in dict.fromkeys(u.rstrip("/") for u in targets):
            try:
                resp = self._request("POST", f"{url}{path}", body, timeout=max(self.timeout, 30.0), ok=(200, 202))
                return resp.body.strip()
            except HttpError as exc:
                if exc.tls:
                    raise ChaosDBError(str(exc)) from None
                if exc.status is None:
                    last = exc
                    continue
                if exc.status == 401:
                    raise ChaosDBError(
                        f"Patroni refused POST {path} (HTTP 401): set secrets 'patroni_username' and "
                        "'patroni_password' to the restapi.authentication credentials"
                    ) from None
                raise ChaosDBError(f"Patroni refused POST {path}: HTTP {exc.status} {exc.body.strip()}") from None
        raise ChaosDBError(f"no Patroni member accepted POST {path}: {last}")

    def reinitialize(self, api_url: str) -> str:
        """``POST /reinitialize`` (force) to one replica's own API: Patroni stops it, wipes its data and copies it
        again from the leader (a replica that cannot catch up, the WAL it needs removed on the leader)."""
        try:
            resp = self._request("POST", f"{api_url.rstrip('/')}/reinitialize", {"force": True},
                                 timeout=max(self.timeout, 30.0), ok=(200,))
        except HttpError as exc:
            raise ChaosDBError(f"Patroni at {api_url} refused POST /reinitialize: {exc}") from None
        return resp.body.strip()

    def switchover(self, leader: str, candidate: str | None = None) -> str:
        """Ask for a switchover from *leader* (to *candidate*, else Patroni's choice); Patroni's answer."""
        body: dict[str, Any] = {"leader": leader}
        if candidate:
            body["candidate"] = candidate
        return self._post_to_leader("/switchover", body)

    def failover(self, candidate: str) -> str:
        """Ask for a failover to *candidate*; Patroni's answer."""
        return self._post_to_leader("/failover", {"candidate": candidate})

    def wait_for_leader(self, timeout: float, not_named: str | None = None, poll: float = 0.5,
                        newer_than_timeline: int | None = None) -> Member:
        """Wait until a leader that is running (and not *not_named*) exists; with
        *newer_than_timeline*, until that leader also reports (on its own ``GET /patroni``) a timeline
        above it, i.e. its promotion has finished. The returned member carries that live timeline."""
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            try:
                leader = self.leader()
                if leader and leader.state == "running" and leader.name != not_named:
                    if newer_than_timeline is None:
                        return leader
                    live = self.node_status(leader.api_url).get("timeline") if leader.api_url else None
                    if isinstance(live, int) and live > newer_than_timeline:
                        return replace(leader, timeline=live)
                    last = f"leader={leader.name} on timeline {live}, waiting for > {newer_than_timeline}"
                else:
                    last = f"leader={leader.name if leader else None} state={leader.state if leader else None}"
            except (ChaosDBError, HttpError) as exc:
                last = str(exc)
            if time.monotonic() >= deadline:
                raise ChaosDBError(f"no running leader{' other than ' + not_named if not_named else ''} "
                                   f"within {timeout:.0f}s ({last})")
            time.sleep(poll)
