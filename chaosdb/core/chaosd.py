"""The API of chaosd, Chaos Mesh's agent for physical and virtual machines (``chaosd server``).

Three calls matter: ``POST /api/attack/<kind>`` starts an attack and answers its ``uid``; ``DELETE
/api/attack/<uid>`` recovers it; ``GET /api/system/health``. Field names are chaosd's own (commit bc039aa,
``pkg/core/*.go``; the same names appear under ``spec.<action>`` of a PhysicalMachineChaos). An attack is
remembered as an :func:`attack_entry` in the fault record, so any process can recover it from the record alone
(:func:`recover_entry`; :func:`recover_attacks` for the revert handlers of the engines that ask chaosd).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Callable

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.records import FaultRecord
from chaosdb.core.http import HttpError, request_json
from chaosdb.core.processes import same_process, start_time
from chaosdb.core.tls import ClientTls

__all__ = ["Chaosd", "ProcessEnded", "transient_refusal", "ended_process", "attack_entry", "recover_entry", "recover_attacks",
           "ATTACK_KINDS", "SERVER_FILE", "MACHINES_FILE", "cluster_chaosd", "undo_without_chaosd", "attack_ipset", "leftovers",
           "remove_leftovers"]

#: the attack kinds of chaosd's HTTP API this pack uses
ATTACK_KINDS = ("process", "stress", "network", "disk", "clock", "user_defined")

#: chaosd's process attack lists every process of the machine and reads each one's name: a process that exits
#: in between (a PostgreSQL backend under load) fails the whole attack with this; it is worth asking again
_PROC_RACE = re.compile(r"open /proc/\d+/\w+: no such file or directory")
_PROC_RACE_TRIES = 5
#: chaosd's answer to a process attack on a pid no process has (any more)
_NOT_FOUND = re.compile(r"process (\S+) not found")

#: chaosd's answers to DELETE for an attack that is already over
_ALREADY_OVER = ("can not recover destroyed experiment", "record not found")


class ProcessEnded(ChaosDBError):
    """chaosd found no process with the pid (or name) it was given: the process ended between the moment the
    pack listed the target's processes and the attack (a PostgreSQL backend, a postmaster Patroni restarts)."""

    def __init__(self, message: str, process: str) -> None:
        super().__init__(message)
        self.process = process


def transient_refusal(message: str) -> bool:
    """chaosd failed a process attack because *some* process of the machine exited while it listed them all:
    asking again is the cure (the Chaos Mesh controller asks again by itself)."""
    return bool(_PROC_RACE.search(message))


def ended_process(message: str) -> str | None:
    """The pid (or name) of a process attack chaosd refused because no such process runs; else None."""
    match = _NOT_FOUND.search(message)
    return match.group(1) if match else None


@dataclass(frozen=True)
class Chaosd:
    """One ``chaosd server`` (``url`` like ``http://10.0.0.5:31767``)."""

    url: str
    tls: ClientTls | None = None
    timeout_s: float = 30.0

    def _url(self, path: str) -> str:
        return self.url.rstrip("/") + path

    def health(self) -> None:
        """Raise :class:`ChaosDBError` saying how to start chaosd when it does not answer."""
        try:
            request_json("GET", self._url("/api/system/health"), tls=self.tls, url_key="chaosd_url", timeout=5.0)
        except HttpError as exc:
            raise ChaosDBError(f"no chaosd answers at {self.url} ({exc}): start it on the database's machine as "
                               "root with 'chaosd server -a <address> -p <port>' (chaosdb cluster up --chaosd for "
                               "the embedded cluster), or set chaosd_url") from None

    def attack(self, kind: str, body: dict[str, Any]) -> str:
        """Start an attack; its uid. chaosd's refusal comes back as :class:`ChaosDBError` with its message."""
        if kind not in ATTACK_KINDS:
            raise ChaosDBError(f"unknown chaosd attack kind {kind!r}; one of {', '.join(ATTACK_KINDS)}")
        for attempt in range(_PROC_RACE_TRIES):
            try:
                resp = request_json("POST", self._url(f"/api/attack/{kind}"), body, tls=self.tls,
                                    url_key="chaosd_url", timeout=self.timeout_s, ok=(200, 400, 404, 500))
            except HttpError as exc:
                raise ChaosDBError(f"chaosd at {self.url}: {exc}") from None
            answer = _json(resp.body)
            uid = answer.get("uid") if resp.status == 200 else None
            if uid:
                return str(uid)
            message = _message(answer, resp.body)
            ended = ended_process(message) if kind == "process" else None
            if ended is not None:
                raise ProcessEnded(f"chaosd at {self.url}: process {ended} has ended (no such process to "
                                   f"{body.get('action', 'attack')})", ended)
            if not (transient_refusal(message) and attempt + 1 < _PROC_RACE_TRIES):
                raise ChaosDBError(f"chaosd at {self.url} refused the {kind} attack ({body.get('action', '?')}): "
                                   f"{message}")
        raise AssertionError("unreachable")

    def recover(self, uid: str) -> bool:
        """Recover attack *uid*: True when chaosd undid it now, False when it was already over."""
        try:
            resp = request_json("DELETE", self._url(f"/api/attack/{uid}"), tls=self.tls, url_key="chaosd_url",
                                timeout=self.timeout_s, ok=(200, 404, 500))
        except HttpError as exc:
            raise ChaosDBError(f"chaosd at {self.url} could not be asked to recover attack {uid}: {exc}") from None
        if resp.status == 200:
            return True
        message = _message(_json(resp.body), resp.body)
        if any(text in message for text in _ALREADY_OVER):
            return False
        raise ChaosDBError(f"chaosd at {self.url} did not recover attack {uid}: {message}")


def _json(body: str) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _message(answer: dict[str, Any], body: str) -> str:
    """chaosd's error message without the Go stack it appends (``full_text``)."""
    text = str(answer.get("message") or body[:300]).strip()
    for prefix in ("error.api.internal_server_error: ", "error.api.resource_not_found: ", "error.api.bad_request: "):
        text = text.replace(prefix, "")
    return text


def attack_entry(server: Chaosd, uid: str, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """What a fault record keeps of an attack: enough to recover it from any process, and to undo a process stop
    or a partition without chaosd when it is gone (:func:`undo_without_chaosd`)."""
    tls = server.tls
    pid = body.get("pid") or (int(body["process"]) if str(body.get("process") or "").isdigit() else 0)
    return {"url": server.url, "uid": uid, "kind": kind, "action": str(body.get("action")),
            "process": body.get("process"), "signal": body.get("signal"),
            "recover_cmd": body.get("recoverCmd") if kind == "user_defined" else None,
            "target_process": {"pid": pid, "start": start_time(pid)} if pid else {},
            "tls": {"ca_file": tls.ca_file, "cert_file": tls.cert_file, "key_file": tls.key_file,
                    "verify": tls.verify} if tls and tls.given else {}}


def undo_without_chaosd(entry: dict[str, Any]) -> str:
    """Undo an attack whose chaosd cannot be reached, where this machine can: a stopped process gets SIGCONT, a
    partition's chains and ipset are removed. What was done ("" when nothing can be: a skewed clock stays until
    its process restarts)."""
    import signal  # noqa: PLC0415

    if entry.get("kind") == "process" and entry.get("signal") == int(signal.SIGSTOP) and \
            str(entry.get("process") or "").isdigit():
        try:
            os.kill(int(entry["process"]), signal.SIGCONT)
        except ProcessLookupError:
            pass
        return f"sent SIGCONT to process {entry['process']}"
    recover_cmd = str(entry.get("recover_cmd") or "")
    if entry.get("kind") == "user_defined" and recover_cmd.startswith("iptables "):
        argv = shlex.split(recover_cmd)
        done = _run(*argv)
        return f"ran {recover_cmd!r}" + ("" if done.returncode == 0 else " (the rule was gone already)")
    if entry.get("kind") == "network" and entry.get("uid"):
        removed = remove_leftovers(str(entry["uid"]), force=True)
        return "removed " + (", ".join(removed) or "nothing (already gone)")
    return ""


def recover_entry(entry: dict[str, Any]) -> bool:
    """Recover the attack a record's entry names (see :func:`attack_entry`). An attack on one process (a clock
    skew, a stop) whose process has exited since is over: chaosd cannot recover it (it looks for the process),
    and nothing is left to undo."""
    tls = ClientTls("chaosd", **entry["tls"]) if entry.get("tls") else None
    try:
        return Chaosd(entry["url"], tls).recover(entry["uid"])
    except ChaosDBError:
        if entry.get("target_process") and not same_process(entry["target_process"]):
            return False
        raise


def recover_attacks(rec: FaultRecord, out: dict[str, Any], attacks: list[dict[str, Any]],
                    recover: Callable[[dict[str, Any]], bool]) -> list[str]:
    """Recover *attacks* (entries of *rec*) one by one with *recover* (True: undone now, False: over already), then
    remove what a network attack leaves behind. An attack that cannot be recovered so is undone here where this
    machine can (:func:`undo_without_chaosd`), said in the record's and the revert's notes. Adds each attack's
    ``uid``, ``action`` and ``recovered_now`` to ``out["attacks"]``; the errors of those left as they were."""
    errors: list[str] = []
    for attack in attacks:
        try:
            attack["recovered_now"] = recover(attack)
            if attack.get("kind") == "network":
                remove_leftovers(attack["uid"])
        except ChaosDBError as exc:
            undone = undo_without_chaosd(attack)
            if not undone:
                errors.append(f"{exc}; restart the process to end a {attack.get('action')} attack")
                continue
            attack["recovered_now"] = True
            rec.notes.append(f"{exc}: undone here instead ({undone})")
            out.setdefault("notes", []).append(rec.notes[-1])
    if attacks:
        out.setdefault("attacks", []).extend({k: a.get(k) for k in ("uid", "action", "recovered_now")}
                                             for a in attacks)
    return errors


#: where ``chaosdb cluster up --chaosd`` records the chaosd it started beside an embedded cluster
SERVER_FILE = "chaosd/server.json"
#: the PhysicalMachines registered for the cluster's nodes (:func:`chaosdb.chaosmesh.physical.register_machines`)
MACHINES_FILE = "chaosd/machines.json"


def cluster_chaosd(cluster_dir: str) -> str:
    """The URL of the chaosd started beside the embedded cluster in *cluster_dir* ("" when none was)."""
    path = os.path.join(cluster_dir, SERVER_FILE) if cluster_dir else ""
    try:
        with open(path) as f:
            return str(json.load(f).get("url") or "")
    except (OSError, ValueError):
        return ""


#: the chains chaosd's network attacks jump through from INPUT and OUTPUT
CHAOSD_CHAINS = {"CHAOS-INPUT": "INPUT", "CHAOS-OUTPUT": "OUTPUT"}


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False)


def attack_ipset(uid: str) -> str:
    """The ipset chaosd names after a network attack (``chaos-`` and the uid's first 16 characters)."""
    return f"chaos-{uid[:16]}"


def leftovers() -> list[str]:
    """What chaosd's network attacks left on this machine: ``CHAOS-*`` chains, the attacks' own chains and their
    ``chaos-*`` ipsets."""
    found = []
    if shutil.which("iptables"):
        for line in _run("iptables", "-S").stdout.splitlines():
            if line.startswith("-N ") and (line.split()[1] in CHAOSD_CHAINS or "/" in line.split()[1]):
                found.append(f"iptables chain {line.split()[1]}")
    if shutil.which("ipset"):
        found += [f"ipset {n}" for n in _run("ipset", "list", "-n").stdout.split() if n.startswith("chaos-")]
    return found


def remove_leftovers(uid: str = "", force: bool = False) -> list[str]:
    """Remove what chaosd leaves after recovering a network attack (attack *uid*'s, or every recovered one's when
    *uid* is empty): the attack's chains, which still hold DROP rules on its ipset though nothing jumps to them
    any more, the ipset, and ``CHAOS-INPUT``/``CHAOS-OUTPUT`` once empty. An attack still active (its chain still
    jumped to) is left alone, unless *force* (its chaosd is gone and can no longer recover it)."""
    removed: list[str] = []
    if not shutil.which("iptables"):
        return removed
    rules = _run("iptables", "-S").stdout.splitlines()
    sets = [attack_ipset(uid)] if uid else sorted({p.split()[0] for r in rules for p in r.split("--match-set ")[1:]
                                                    if p.startswith("chaos-")})
    chains = sorted({r.split()[1] for r in rules if r.startswith("-A ") and "/" in r.split()[1]
                     and any(f"--match-set {s} " in r for s in sets)})
    if force:
        for rule in rules:
            parts = rule.split()
            if rule.startswith("-A ") and parts[1] in CHAOSD_CHAINS and "-j" in parts and \
                    parts[parts.index("-j") + 1] in chains:
                _run("iptables", "-D", *parts[1:])
        rules = _run("iptables", "-S").stdout.splitlines()
    jumped = {r.split("-j ")[1].split()[0] for r in rules if r.startswith("-A ") and "-j " in r}
    kept_sets: set[str] = set()
    for chain in chains:
        if chain in jumped:
            kept_sets.update(s for s in sets if any(f"--match-set {s} " in r and r.split()[1] == chain
                                                    for r in rules))
            continue
        _run("iptables", "-F", chain)
        if _run("iptables", "-X", chain).returncode == 0:
            removed.append(f"iptables chain {chain}")
    for name in sets:
        if name not in kept_sets and shutil.which("ipset") and _run("ipset", "destroy", name).returncode == 0:
            removed.append(f"ipset {name}")
    for chain, parent in CHAOSD_CHAINS.items():
        listing = _run("iptables", "-S", chain)
        if listing.returncode != 0 or any(r.startswith("-A ") for r in listing.stdout.splitlines()):
            continue
        while _run("iptables", "-D", parent, "-j", chain).returncode == 0:
            pass
        if _run("iptables", "-X", chain).returncode == 0:
            removed.append(f"iptables chain {chain}")
    return removed
