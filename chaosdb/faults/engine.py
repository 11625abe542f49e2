"""Inject and revert local faults; find and remove everything they left.

Every injection follows the same order: check that the host can do it (raise
before anything changes), write the fault's record, make each change and add it
to the record, then (with a duration) start a detached reverter. If any step
fails, what was done is reverted before the error is raised. ``revert`` works
from the record alone, in any process, any number of times.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from chaosdb.core.detach import spawn_detached
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import cmdline
from chaosdb.core.processes import start_time as process_start_time
from chaosdb.faults import cgroups, netfilter, traffic
from chaosdb.faults.classify import (
    NodeIdentity,
    check_identities,
    label_rules,
    packet_matches,
)
from chaosdb.faults.host import cgroup_host, netem_available, require_root, require_tool
from chaosdb.faults.records import (
    FaultRecord,
    faults_dir,
    load_record,
    load_records,
    new_record,
)

__all__ = [
    "ProcessGroup", "inject_cpu_quota", "inject_memory_limit", "inject_network", "inject_proxy_delay",
    "revert", "revert_id", "revert_all", "cleanup", "residue", "PROXY_MARK", "fault_stats", "FAULT_KINDS",
    "NETWORK_KINDS",
]

#: the kinds of fault records: cgroup faults, then network faults
NETWORK_KINDS = ("partition", "loss", "bursty-loss", "bandwidth", "delay")
FAULT_KINDS = ("cpu", "memory", *NETWORK_KINDS)

PROXY_MARK = 0x10000000
_OUR_MODULES = ("chaosdb.faults.netproxy", "chaosdb.faults.reverter")


@dataclass
class ProcessGroup:
    """A fault target whose processes can be listed again at any moment (new backends appear)."""

    target: dict[str, Any]  # name and details, as recorded
    pids: Callable[[], list[int]]


# ---------------------------------------------------------------------------
# helpers


def _spawn_detached(argv: list[str]) -> dict[str, Any]:
    """A helper (reverter, proxy) that outlives us and finds the same fault records."""
    pid = spawn_detached(argv, {"CHAOSDB_FAULTS_DIR": str(faults_dir())})
    return {"pid": pid, "start": process_start_time(pid)}


def _same_process(entry: dict[str, Any]) -> bool:
    pid = int(entry.get("pid", 0))
    return pid > 0 and bool(entry.get("start")) and process_start_time(pid) == entry.get("start")


def _stop_process(entry: dict[str, Any], timeout: float = 3.0) -> bool:
    if not _same_process(entry) or int(entry["pid"]) == os.getpid():
        return False
    pid = int(entry["pid"])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _same_process(entry):
        time.sleep(0.02)
    if _same_process(entry):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return True


def _schedule(rec: FaultRecord, duration_s: float) -> None:
    if duration_s and duration_s > 0:
        rec.deadline = rec.created + float(duration_s)
        rec.reverter = _spawn_detached([sys.executable, "-m", "chaosdb.faults.reverter", "--fault-id", rec.id,
                                        "--at", f"{rec.deadline:.3f}"])
        rec.save()


def _validate_duration(duration_s: float) -> float:
    try:
        d = float(duration_s or 0)
    except (TypeError, ValueError):
        raise ChaosDBError(f"duration_s must be a number of seconds, got {duration_s!r}") from None
    if d < 0:
        raise ChaosDBError(f"duration_s must be >= 0 (0 = until rolled back), got {d}")
    return d


def _inject(rec: FaultRecord, steps: Callable[[FaultRecord], None], duration_s: float) -> FaultRecord:
    rec.save()
    try:
        steps(rec)
        _schedule(rec, duration_s)
    except BaseException:
        revert(rec)
        raise
    return rec


# ---------------------------------------------------------------------------
# CPU and memory


def _move_all(path: Path, group: ProcessGroup, rounds: int = 6) -> list[int]:
    """Move the group's processes in until a listing finds none outside (forks race with us)."""
    inside: set[int] = set()
    for _ in range(rounds):
        pids = [p for p in group.pids() if p not in inside]
        if not pids:
            break
        inside.update(cgroups.move_into(path, pids))
    return sorted(inside)


def _inject_cgroup(kind: str, controller: str, groups: list[ProcessGroup], limit: Callable[[Any, Path], dict],
                   params: dict[str, Any], duration_s: float, cluster_dir: str) -> FaultRecord:
    require_root(f"a {kind} fault")
    host = cgroup_host()
    host.hierarchy(controller)  # raises when the controller is missing
    duration_s = _validate_duration(duration_s)
    if not groups:
        raise ChaosDBError(f"no target for the {kind} fault")
    empty = [g.target.get("name") for g in groups if not g.pids()]
    if empty:
        raise ChaosDBError(f"target(s) {', '.join(map(str, empty))} have no running process to limit: "
                           "start them first (cluster up / restart_nodes)")
    rec = new_record(kind, targets=[g.target for g in groups], params=params, cluster_dir=cluster_dir)

    def steps(rec: FaultRecord) -> None:
        for g in groups:
            first = g.pids()[0]
            origin = cgroups.origin_of(host, controller, first)
            path = cgroups.group_path(host, controller, f"{rec.id}-{g.target['name']}")
            rec.cgroups.append({"controller": controller, "path": str(path), "origin": origin,
                                "target": g.target["name"]})
            rec.save()
            cgroups.create_group(host, controller, path.name)
            applied = limit(host, path)
            rec.cgroups[-1]["applied"] = applied
            rec.cgroups[-1]["pids"] = _move_all(path, g)
            rec.save()

    return _inject(rec, steps, duration_s)


def inject_cpu_quota(groups: list[ProcessGroup], quota_s: float, period_s: float = 1.0, duration_s: float = 0,
                     cluster_dir: str = "") -> FaultRecord:
    """Each target's processes together get *quota_s* of CPU time per *period_s*."""
    try:
        quota_s, period_s = float(quota_s), float(period_s)
    except (TypeError, ValueError):
        raise ChaosDBError("quota_s and period_s must be numbers of seconds") from None
    if not 0.001 <= period_s <= 1.0:
        raise ChaosDBError(f"period_s must be between 0.001 and 1 s (the kernel's range), got {period_s}")
    if not 0.001 <= quota_s:
        raise ChaosDBError(f"quota_s must be at least 0.001 s, got {quota_s}")
    params = {"quota_s": quota_s, "period_s": period_s, "cpus": round(quota_s / period_s, 4)}
    return _inject_cgroup("cpu", "cpu", groups, lambda h, p: cgroups.set_cpu_quota(h, p, quota_s, period_s),
                          params, duration_s, cluster_dir)


def inject_memory_limit(groups: list[ProcessGroup], limit_mb: float, duration_s: float = 0,
                        cluster_dir: str = "") -> FaultRecord:
    """Each target's processes together may use at most *limit_mb* MiB (no swap)."""
    try:
        limit_mb = float(limit_mb)
    except (TypeError, ValueError):
        raise ChaosDBError(f"limit_mb must be a number of MiB, got {limit_mb!r}") from None
    if limit_mb < 8:
        raise ChaosDBError(f"limit_mb must be at least 8 MiB, got {limit_mb}")
    limit_bytes = int(limit_mb * 1024 * 1024)
    return _inject_cgroup("memory", "memory", groups, lambda h, p: cgroups.set_memory_limit(h, p, limit_bytes),
                          {"limit_mb": limit_mb}, duration_s, cluster_dir)


# ---------------------------------------------------------------------------
# network


def _require_netfilter(what: str) -> None:
    require_root(what)
    require_tool("iptables", "iptables")
    netfilter.iptables("filter", "-S", "INPUT")  # raises with iptables' own words when it cannot work here


def _foreign_users(nodes: list[NodeIdentity], cluster_dir: str) -> list[str]:
    """Processes running as a node's user but not belonging to this cluster (they would be matched too)."""
    uids = {n.uid: n.name for n in nodes}
    root = os.path.realpath(cluster_dir) if cluster_dir else ""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            uid = entry.stat().st_uid
        except OSError:
            continue
        if uid not in uids:
            continue
        try:
            cwd = os.path.realpath(os.readlink(f"/proc/{entry.name}/cwd"))
        except OSError:
            continue
        if root and not (cwd == root or cwd.startswith(root + os.sep)):
            found.append(f"pid {entry.name} (uid {uid}, cwd {cwd})")
    return found


def _check_network(targets: list[NodeIdentity], nodes: list[NodeIdentity], cluster_dir: str, what: str) -> None:
    _require_netfilter(what)
    check_identities(nodes)
    names = {n.name for n in nodes}
    for t in targets:
        if t.name not in names:
            raise ChaosDBError(f"target {t.name} is not one of the cluster's nodes")
    foreign = _foreign_users(nodes, cluster_dir)
    if foreign:
        raise ChaosDBError("processes outside this cluster run as its nodes' users, so rules could not tell them "
                           "apart (another cluster started with the same node users?): " + "; ".join(foreign[:5])
                           + ". Stop the other cluster first")


def _new_chain(rec: FaultRecord, table: str, chain: str, parent: str = "") -> str:
    """Record the chain first (so a revert finds it whatever happens next), then create it."""
    rec.chains.append({"table": table, "chain": chain, "parent": parent})
    rec.save()
    netfilter.create_chain(table, chain)
    return chain


def _gilbert_chains(rec: FaultRecord, loss: float, burst: float) -> str:
    """Gilbert-model bursty loss: enter a burst with probability q, stay with 1 - 1/burst.

    Mean burst = *burst* packets, long-run loss = *loss* when q = loss / (burst (1 - loss)).
    The burst state is kept per source address (xt_recent)."""
    q = loss / (burst * (1.0 - loss))
    r = 1.0 / burst
    good, bad = f"CHAOSDB-{rec.id}-G", f"CHAOSDB-{rec.id}-B"
    name = f"chaosdb{rec.id}"
    for chain in (bad, good):
        _new_chain(rec, "filter", chain)
    netfilter.append_rule("filter", bad, ["-m", "statistic", "--mode", "random", "--probability", f"{r:.6f}",
                                          "-m", "recent", "--name", name, "--remove", "--rsource", "-j", "RETURN"])
    netfilter.append_rule("filter", bad, ["-j", "DROP"])
    netfilter.append_rule("filter", good, ["-m", "recent", "--name", name, "--rcheck", "--rsource", "-j", bad])
    netfilter.append_rule("filter", good, ["-m", "statistic", "--mode", "random", "--probability", f"{q:.6f}",
                                           "-m", "recent", "--name", name, "--set", "--rsource", "-j", "DROP"])
    return good


def inject_network(kind: str, targets: list[NodeIdentity], nodes: list[NodeIdentity], scope: str = "all",
                   direction: str = "both", duration_s: float = 0, cluster_dir: str = "",
                   loss_percent: float = 0.0, burst_packets: float = 0.0, rate_kbit: int = 0,
                   delay_ms: float = 0.0, jitter_ms: float = 0.0) -> FaultRecord:
    """``partition``, ``loss``, ``bursty-loss``, ``bandwidth`` or ``delay`` (netem hosts only) on *targets*."""
    if kind not in NETWORK_KINDS:
        raise ChaosDBError(f"unknown network fault {kind!r} (one of {', '.join(NETWORK_KINDS)})")
    duration_s = _validate_duration(duration_s)
    matches = {t.name: packet_matches(t, nodes, scope, direction) for t in targets}  # validates scope/direction
    params: dict[str, Any] = {"scope": scope, "direction": direction}
    if kind in ("loss", "bursty-loss"):
        if not 0 < float(loss_percent) < 100:
            raise ChaosDBError(f"loss_percent must be between 0 and 100 (exclusive), got {loss_percent}")
        params["loss_percent"] = float(loss_percent)
    if kind == "bursty-loss":
        if not float(burst_packets) >= 1:
            raise ChaosDBError(f"mean_burst_packets must be >= 1, got {burst_packets}")
        params["mean_burst_packets"] = float(burst_packets)
    if kind == "bandwidth":
        if not int(rate_kbit) >= 8:
            raise ChaosDBError(f"rate_kbit must be at least 8, got {rate_kbit}")
        params["rate_kbit"] = int(rate_kbit)
    if kind == "delay":
        if not netem_available():
            raise ChaosDBError("this kernel has no netem qdisc: use the latency proxy (delay_traffic does it)")
        params.update(delay_ms=float(delay_ms), jitter_ms=float(jitter_ms))
    if not targets:
        raise ChaosDBError("no target for the network fault")
    _check_network(targets, nodes, cluster_dir, f"a {kind} fault")
    if kind in ("bandwidth", "delay"):
        require_tool("tc", "iproute2")
    rec = new_record(kind, targets=[{"name": t.name, "address": t.address, "uid": t.uid} for t in targets],
                     params=params, cluster_dir=cluster_dir)

    def steps(rec: FaultRecord) -> None:
        mangle = _new_chain(rec, "mangle", f"CHAOSDB-{rec.id}-L", "OUTPUT")
        for rule in label_rules(nodes):
            netfilter.append_rule("mangle", mangle, rule)
        if kind in ("bandwidth", "delay"):
            entry = traffic.add_class(int(rate_kbit) if kind == "bandwidth" else 10_000_000,
                                      delay_ms=float(delay_ms) if kind == "delay" else 0.0,
                                      jitter_ms=float(jitter_ms) if kind == "delay" else 0.0)
            rec.tc.append(entry)
            rec.save()
            for t in targets:
                for m in matches[t.name]:
                    netfilter.append_rule("mangle", mangle, m + ["-j", "CLASSIFY", "--set-class", entry["classid"]])
        netfilter.hook_chain("mangle", "OUTPUT", mangle, rec.id)
        if kind in ("partition", "loss", "bursty-loss"):
            chain = _new_chain(rec, "filter", f"CHAOSDB-{rec.id}", "INPUT")
            if kind == "partition":
                action = ["-j", "DROP"]
            elif kind == "loss":
                action = ["-m", "statistic", "--mode", "random", "--probability",
                          f"{float(loss_percent) / 100:.6f}", "-j", "DROP"]
            else:
                action = ["-j", _gilbert_chains(rec, float(loss_percent) / 100, float(burst_packets))]
            for t in targets:
                for m in matches[t.name]:
                    netfilter.append_rule("filter", chain, m + action)
            netfilter.hook_chain("filter", "INPUT", chain, rec.id)

    return _inject(rec, steps, duration_s)


# ---------------------------------------------------------------------------
# latency without netem: the proxy


def _established(address: str, port: int) -> list[dict[str, Any]]:
    """Established TCP connections to address:port seen from the client side, with the client's uid."""
    ss = require_tool("ss", "iproute2")
    proc = subprocess.run([ss, "-tnHe", "state", "established", "dst", f"{address}", "dport", "=", f":{port}"],
                          capture_output=True, text=True)
    out = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        local, peer = parts[2], parts[3]
        uid = 0
        for p in parts[4:]:
            if p.startswith("uid:"):
                uid = int(p[4:])
        la, lp = local.rsplit(":", 1)
        out.append({"local": la, "lport": int(lp), "peer": peer, "uid": uid})
    return out


def _reset(conn: dict[str, Any], address: str, port: int) -> bool:
    ss = require_tool("ss", "iproute2")
    proc = subprocess.run([ss, "-K", "-tn", "state", "established", "src", conn["local"], "sport", "=",
                           f":{conn['lport']}", "dst", address, "dport", "=", f":{port}"],
                          capture_output=True, text=True)
    return proc.returncode == 0


def _wait_port_file(path: Path, entry: dict[str, Any], timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return int(path.read_text())
        if not _same_process(entry):
            break
        time.sleep(0.02)
    raise ChaosDBError("the latency proxy did not start (is the address in use?)")


def inject_proxy_delay(targets: list[NodeIdentity], nodes: list[NodeIdentity], ports: dict[str, list[int]],
                       delay_ms: float, jitter_ms: float = 0.0, scope: str = "clients", direction: str = "both",
                       existing: str = "reset", duration_s: float = 0, cluster_dir: str = "") -> FaultRecord:
    """Latency and jitter on connections to *targets*' *ports* through a TCP proxy per port.

    New connections in *scope* are redirected (nat OUTPUT) to the proxy; existing ones are reset
    (``existing="reset"``: the client reconnects, through the proxy) or kept undelayed (``"keep"``)."""
    duration_s = _validate_duration(duration_s)
    if not float(delay_ms) > 0:
        raise ChaosDBError(f"delay_ms must be > 0, got {delay_ms}")
    if not 0 <= float(jitter_ms) <= float(delay_ms):
        raise ChaosDBError(f"jitter_ms must be between 0 and delay_ms ({delay_ms}), got {jitter_ms}")
    if existing not in ("reset", "keep"):
        raise ChaosDBError(f"existing_connections must be 'reset' or 'keep', got {existing!r}")
    if scope not in ("peers", "clients", "all") or direction not in ("both", "inbound", "outbound"):
        raise ChaosDBError("scope must be peers|clients|all and direction both|inbound|outbound")
    if not targets:
        raise ChaosDBError("no target for the delay fault")
    _check_network(targets, nodes, cluster_dir, "a delay fault")
    require_tool("ss", "iproute2")
    node_uids = [n.uid for n in nodes]
    params = {"delay_ms": float(delay_ms), "jitter_ms": float(jitter_ms), "scope": scope, "direction": direction,
              "existing_connections": existing, "via": "proxy (no netem on this kernel)"}
    rec = new_record("delay", targets=[{"name": t.name, "address": t.address, "uid": t.uid,
                                        "ports": ports[t.name]} for t in targets],
                     params=params, cluster_dir=cluster_dir)

    def steps(rec: FaultRecord) -> None:
        chain = _new_chain(rec, "nat", f"CHAOSDB-{rec.id}-N", "OUTPUT")
        before: list[tuple[str, int, dict[str, Any]]] = []
        for t in targets:
            peers = [n for n in nodes if n.name != t.name]
            for port in ports[t.name]:
                before += [(t.address, port, c) for c in _established(t.address, port)]
                port_file = faults_dir() / f".{rec.id}-{t.name}-{port}.port"
                entry = _spawn_detached([
                    sys.executable, "-m", "chaosdb.faults.netproxy", "--listen", f"{t.address}:0",
                    "--upstream", f"{t.address}:{port}", "--delay-ms", str(delay_ms), "--jitter-ms", str(jitter_ms),
                    "--direction", {"inbound": "inbound", "outbound": "outbound"}.get(direction, "both"),
                    "--mark", hex(PROXY_MARK), "--port-file", str(port_file), "--fault-id", rec.id])
                entry["what"] = f"proxy {t.name}:{port}"
                rec.processes.append(entry)
                rec.save()
                try:
                    proxy_port = _wait_port_file(port_file, entry)
                finally:
                    port_file.unlink(missing_ok=True)
                entry["port"] = proxy_port
                dnat = ["-j", "DNAT", "--to-destination", f"{t.address}:{proxy_port}"]
                base = ["-p", "tcp", "-d", t.address, "--dport", str(port)]
                if scope in ("peers", "all"):
                    for x in peers:
                        netfilter.append_rule("nat", chain, base + ["-m", "owner", "--uid-owner", str(x.uid)] + dnat)
                if scope in ("clients", "all"):
                    for uid in node_uids:
                        netfilter.append_rule("nat", chain, base + ["-m", "owner", "--uid-owner", str(uid),
                                                                    "-j", "RETURN"])
                    netfilter.append_rule("nat", chain, base + ["-m", "mark", "!", "--mark",
                                                                f"0x{PROXY_MARK:x}/0x{PROXY_MARK:x}"] + dnat)
        netfilter.hook_chain("nat", "OUTPUT", chain, rec.id)
        rec.save()
        if existing == "reset":
            peer_uids = {n.uid for n in nodes}
            reset = 0
            for address, port, conn in before:
                is_peer = conn["uid"] in peer_uids
                t_uid = next(t.uid for t in targets if t.address == address)
                if conn["uid"] == t_uid:
                    continue  # the node's own connections to itself are never delayed
                if (scope == "all") or (scope == "peers" and is_peer) or (scope == "clients" and not is_peer):
                    reset += _reset(conn, address, port)
            rec.notes.append(f"reset {reset} existing connection(s) so that they reconnect through the proxy")
            rec.save()

    return _inject(rec, steps, duration_s)


# ---------------------------------------------------------------------------
# revert, cleanup, residue


def fault_stats(rec: FaultRecord) -> dict[str, Any]:
    """What the fault did so far: cgroup counters, packets dropped, bytes shaped."""
    stats: dict[str, Any] = {}
    if rec.cgroups:
        host = cgroup_host()
        stats["cgroups"] = {c["target"]: cgroups.group_stats(host, c["controller"], Path(c["path"]))
                            for c in rec.cgroups}
    for ch in rec.chains:
        if ch["table"] == "filter" and ch["parent"] == "INPUT":
            counters = netfilter.chain_counters("filter", ch["chain"])
            stats["packets_matched"] = sum(c["packets"] for c in counters)
    if rec.tc:
        stats["tc"] = [traffic.class_stats(e) for e in rec.tc]
    return stats


def revert(rec: FaultRecord) -> dict[str, Any]:
    """Undo everything *rec* lists (idempotent); delete the record; return what was undone."""
    out: dict[str, Any] = {"id": rec.id, "kind": rec.kind, "targets": [t.get("name") for t in rec.targets]}
    errors: list[str] = []
    try:
        out["stats"] = fault_stats(rec)
    except Exception as exc:  # stats are a courtesy; reverting is the job
        out["stats"] = {"error": str(exc)}
    for entry in rec.processes:
        _stop_process(entry)
    for ch in rec.chains:
        if ch.get("parent"):
            try:
                netfilter.remove_chain(ch["table"], ch["parent"], ch["chain"], rec.id)
            except ChaosDBError as exc:
                errors.append(str(exc))
    for ch in rec.chains:  # helper chains (bursty loss) once nothing jumps to them
        if not ch.get("parent"):
            netfilter.iptables(ch["table"], "-F", ch["chain"], check=False)
    for ch in rec.chains:
        if not ch.get("parent"):
            netfilter.iptables(ch["table"], "-X", ch["chain"], check=False)
    for entry in rec.tc:
        try:
            traffic.remove_class(entry)
        except ChaosDBError as exc:
            errors.append(str(exc))
    if rec.cgroups:
        host = cgroup_host()
        for c in rec.cgroups:
            try:
                cgroups.release_group(host, c["controller"], Path(c["path"]), c.get("origin", "/"))
            except ChaosDBError as exc:
                errors.append(str(exc))
    if rec.reverter:
        _stop_process(rec.reverter)
    if errors:
        rec.notes.append("revert errors: " + "; ".join(errors))
        rec.save()
        raise ChaosDBError(f"fault {rec.id} ({rec.kind}) could not be fully reverted: " + "; ".join(errors)
                           + ". Run 'chaosdb local cleanup'")
    rec.delete()
    out["reverted_at"] = round(time.time(), 3)
    return out


def revert_id(fault_id: str) -> dict[str, Any] | None:
    rec = load_record(fault_id)
    return revert(rec) if rec else None


def _timer_dir() -> Path:
    return faults_dir() / "reverted"


def keep_timer_result(done: dict[str, Any]) -> None:
    """Keep what a timed fault did when its detached reverter ended it: the next ``revert_faults``
    (the experiment's rollback) returns it, so the journal has the numbers."""
    d = _timer_dir()
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{done['id']}.json").write_text(json.dumps({**done, "reverted_by": "timer"}) + "\n")


def take_timer_results(kinds: set[str] | None = None, targets: set[str] | None = None) -> list[dict]:
    out = []
    d = _timer_dir()
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            entry = json.loads(p.read_text())
        except (OSError, ValueError):
            p.unlink(missing_ok=True)
            continue
        if kinds and entry.get("kind") not in kinds:
            continue
        if targets and not targets & set(entry.get("targets") or []):
            continue
        out.append(entry)
        p.unlink(missing_ok=True)
    return out


def revert_all(kinds: Iterable[str] = (), owner_pid: int | None = None, targets: Iterable[str] = (),
               include_timed: bool = False) -> list[dict]:
    """Revert the matching active faults; with *include_timed* also return (once) the results of faults
    their timers already reverted."""
    kinds, targets = set(kinds), set(targets)
    done = []
    for rec in load_records():
        if kinds and rec.kind not in kinds:
            continue
        if owner_pid is not None and rec.owner_pid != owner_pid:
            continue
        if targets and not targets & {t.get("name") for t in rec.targets}:
            continue
        done.append(revert(rec))
    if include_timed:
        done += take_timer_results(kinds, targets)
    return done


def _our_processes() -> list[dict[str, Any]]:
    found = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        cmd = cmdline(int(entry.name))
        if any(f"-m {m}" in cmd for m in _OUR_MODULES):
            found.append({"pid": int(entry.name), "start": process_start_time(int(entry.name)), "cmd": cmd.strip()})
    return found


def residue(keep: Iterable[str] = ()) -> dict[str, Any]:
    """Everything of the fault engine present on the host right now; with *keep* (fault ids) leaving out what
    those faults own."""
    keep = set(keep)
    out: dict[str, Any] = {
        "records": [r.summary() for r in load_records() if r.id not in keep],
        "iptables": [ln for ln in (netfilter.tagged_rules() if os.geteuid() == 0 and _have("iptables") else [])
                     if not _names_one_of(ln, keep)],
        "cgroups": [],
        "tc": [],
        "processes": [p["cmd"] for p in _our_processes() if not _names_one_of(p["cmd"], keep)],
    }
    try:
        out["cgroups"] = [g for g in cgroups.tagged_groups(cgroup_host())
                          if Path(g).name.split("-", 1)[0] not in keep
                          and not (keep and Path(g).name == cgroups.PARENT)]
    except ChaosDBError:
        pass
    if _have("tc") and traffic.our_root() and not keep:
        out["tc"] = [f"qdisc htb {traffic.ROOT_HANDLE} on {traffic.DEV}"]
    out["clean"] = not any(out[k] for k in ("records", "iptables", "cgroups", "tc", "processes"))
    return out


def _names_one_of(text: str, fault_ids: set[str]) -> bool:
    """Whether *text* (an iptables line, a command line) belongs to one of *fault_ids*: chains are named
    ``CHAOSDB-<id>…``, rules carry ``chaosdb:<id>``, proxies and reverters ``--fault-id <id>``."""
    return any(f"CHAOSDB-{i}" in text or f"chaosdb:{i}" in text or f"--fault-id {i}" in text for i in fault_ids)


def _same_cluster(a: str, b: str) -> bool:
    return bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b)


def _have(tool: str) -> bool:
    try:
        require_tool(tool, tool)
        return True
    except ChaosDBError:
        return False


def cleanup(cluster_dir: str = "") -> dict[str, Any]:
    """Revert every recorded fault, then remove whatever of ours is left without a record.

    With *cluster_dir*, only that cluster's: its recorded faults are reverted, and of what is left without a
    record everything is removed except what another live fault owns (its chains, rules, cgroup, proxies and
    reverter, and the shared tc qdisc while any other fault is live). Two clusters on one machine (two game days,
    two test workers) then never undo each other's faults."""
    records = load_records()
    mine = [r for r in records if not cluster_dir or _same_cluster(r.cluster_dir, cluster_dir)]
    mine_ids = {r.id for r in mine}
    keep = {r.id for r in records if r.id not in mine_ids}
    reverted, errors = [], []
    for rec in mine:
        try:
            reverted.append(revert(rec))
        except ChaosDBError as exc:
            errors.append(str(exc))
            rec.delete()  # the sweep below removes what it names
    swept: list[str] = []
    for p in _our_processes():
        if not _names_one_of(p["cmd"], keep) and _stop_process(p):
            swept.append(f"process {p['pid']}: {p['cmd']}")
    if os.geteuid() == 0 and _have("iptables"):
        swept += netfilter.remove_tagged(keep)
    try:
        host = cgroup_host()
        for g in cgroups.tagged_groups(host):
            path = Path(g)
            if path.name.split("-", 1)[0] in keep:  # a fault's group is <fault id>-<target>
                continue
            controller = next(c for c in host.controllers if str(path).startswith(str(host.hierarchy(c))))
            if path.name == cgroups.PARENT:
                try:
                    path.rmdir()
                except OSError:
                    pass
            else:
                cgroups.release_group(host, controller, path, "/")
            swept.append(f"cgroup {g}")
    except ChaosDBError as exc:
        if "no cgroup" not in str(exc):
            errors.append(str(exc))
    if _have("tc") and traffic.remove_root_if_unused(force=not keep):
        swept.append(f"tc qdisc {traffic.ROOT_HANDLE} on {traffic.DEV}")
    if not keep:
        take_timer_results()
    left = residue(keep)
    return {"reverted": reverted, "swept": swept, "errors": errors, "clean": left["clean"], "residue": left,
            "kept_other_faults": sorted(keep)}
