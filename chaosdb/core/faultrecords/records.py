"""One JSON record per active fault, whichever engine made it.

A record is written *before* the fault changes anything and updated after each
change (a cgroup made, a chain inserted, a proxy started, a chaosd attack begun), so that whatever
happens to the process that injected it, a fresh process (``chaosdb faults
cleanup``, the detached reverter, the next run's control) knows exactly what to
undo. The record is deleted once the fault is fully reverted. Its lists are the engines' parts (``cgroups``,
``chains``, ``tc``, ``processes``, ``stopped``: the host engine's; ``attacks``: chaosd's, those with an ``object``
carried out by Chaos Mesh); each engine's revert handler (:mod:`chaosdb.core.faultrecords.handlers`) undoes its own.

Records live in ``$CHAOSDB_FAULTS_DIR``, else in a runtime folder outside every cluster's home, so that a record
outlives the folders it names (a purged cluster, a home removed by hand): ``/run/chaosdb/faults`` for root (a tmpfs:
it forgets faults exactly when a reboot forgets the rules), ``$XDG_RUNTIME_DIR/chaosdb/faults`` (else
``~/.local/state/chaosdb-faults``) for other users. With ``CHAOSDB_HOME`` set, each home has its own folder below it
(``homes/<tag of the home's path>``): two homes on one host keep apart. Each record names its cluster and the run
(process) that made it (:class:`RunScope`).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import path_tag
from chaosdb.core.processes import start_time as process_start_time
from chaosdb.core.settings import env_value, system_value

__all__ = ["FaultRecord", "faults_dir", "records_root", "path_tag", "new_record", "load_records", "load_record",
           "RunScope", "same_cluster"]


def faults_dir() -> Path:
    """Where fault records are kept: CHAOSDB_FAULTS_DIR, else the runtime folder (:func:`records_root`), in the
    home's own folder below it when ``CHAOSDB_HOME`` is set."""
    env = env_value("CHAOSDB_FAULTS_DIR")
    if env:
        return Path(env)
    home = env_value("CHAOSDB_HOME")
    return records_root() / "homes" / path_tag(home) if home else records_root()


def records_root() -> Path:
    """The runtime folder of this user's fault records, outside every cluster's home."""
    if os.geteuid() == 0:
        return Path("/run/chaosdb/faults")
    runtime = system_value("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "chaosdb" / "faults"
    return Path.home() / ".local" / "state" / "chaosdb-faults"


@dataclass
class FaultRecord:
    id: str
    kind: str
    created: float
    owner_pid: int
    owner_start: int
    targets: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    deadline: float | None = None  # epoch seconds after which the fault reverts itself
    cluster_dir: str = ""
    cgroups: list[dict[str, Any]] = field(default_factory=list)  # {controller, path, origin, pids}
    chains: list[dict[str, str]] = field(default_factory=list)  # {table, chain, parent}
    tc: list[dict[str, Any]] = field(default_factory=list)  # {dev, classid, prio}
    processes: list[dict[str, Any]] = field(default_factory=list)  # {pid, start, what}
    reverter: dict[str, Any] = field(default_factory=dict)  # {pid, start}
    attacks: list[dict[str, Any]] = field(default_factory=list)  # chaosd attacks {url, uid, kind, action, tls}
    stopped: list[dict[str, Any]] = field(default_factory=list)  # {pid, start, target}: SIGSTOPped, continued on revert
    notes: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        """Where the record is kept."""
        return faults_dir() / f"{self.id}.json"

    def save(self) -> None:
        """Write the record (private folder and file), before the fault changes anything."""
        d = faults_dir()
        tmp = d / f".{self.id}.tmp"
        for attempt in (1, 2):  # a home's emptied folder may be removed by another process's delete in between
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o700)
            try:
                tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
                os.replace(tmp, self.path)
                return
            except FileNotFoundError:
                if attempt == 2:
                    raise

    def delete(self) -> None:
        """Remove the record (the fault is reverted); nothing when it is already gone."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        folder = self.path.parent
        if folder.parent.name == "homes":  # a home's own folder, emptied: gone with its last record
            try:
                folder.rmdir()
            except OSError:
                pass

    def summary(self) -> dict[str, Any]:
        """The record as ``chaosdb faults list`` and the probes show it: id, kind, targets, parameters, age, owner."""
        return {
            "id": self.id, "kind": self.kind, "targets": [t.get("name") for t in self.targets],
            "params": self.params, "created": round(self.created, 3),
            "deadline": round(self.deadline, 3) if self.deadline else None,
            "owner_pid": self.owner_pid,
        }

    def owned_by_live_process(self) -> bool:
        """Whether the process that made the fault still runs (its pid with the same start time)."""
        return self.owner_start != 0 and process_start_time(self.owner_pid) == self.owner_start


def same_cluster(a: str, b: str) -> bool:
    """Whether two cluster folders are the same cluster (both given, same real path)."""
    return bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b)


@dataclass(frozen=True)
class RunScope:
    """Which faults a rollback, a control or a cleanup may touch: those this run (this process) made, and the
    orphans of its own cluster (made by a run that is gone); everything only with ``all_clusters``."""

    owner_pid: int
    owner_start: int
    cluster_dir: str = ""
    all_clusters: bool = False

    @classmethod
    def this_run(cls, cluster_dir: str = "", all_clusters: bool = False) -> "RunScope":
        """The scope of this process's run (of *cluster_dir*, or of every cluster)."""
        pid = os.getpid()
        return cls(pid, process_start_time(pid), cluster_dir, all_clusters)

    def owns(self, owner_pid: int, owner_start: int) -> bool:
        """Whether the process (pid and start time) is this run."""
        return owner_pid == self.owner_pid and owner_start == self.owner_start

    def matches(self, rec: "FaultRecord") -> bool:
        """Whether the scope may touch *rec*: this run's own, an orphan of its cluster, or anything with
        ``all_clusters``."""
        if self.all_clusters or self.owns(rec.owner_pid, rec.owner_start):
            return True
        return same_cluster(rec.cluster_dir, self.cluster_dir) and not rec.owned_by_live_process()


def new_record(kind: str, **fields: Any) -> FaultRecord:
    """A fault record of *kind* owned by this process (its pid and start time), not yet written."""
    pid = os.getpid()
    return FaultRecord(id=secrets.token_hex(4), kind=kind, created=time.time(), owner_pid=pid,
                       owner_start=process_start_time(pid), **fields)


def load_record(fault_id: str) -> FaultRecord | None:
    """The record of fault *fault_id*, or None when it is gone (reverted)."""
    path = faults_dir() / f"{fault_id}.json"
    try:
        return FaultRecord(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as exc:
        raise ChaosDBError(f"{path} is not a chaosdb fault record ({exc}); remove it after checking "
                           "'chaosdb faults residue'") from None


def load_records() -> list[FaultRecord]:
    """Every fault record on this host (unreadable ones left out), oldest name first."""
    d = faults_dir()
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("*.json")):
        rec = load_record(p.stem)
        if rec is not None:
            out.append(rec)
    return sorted(out, key=lambda r: r.created)
