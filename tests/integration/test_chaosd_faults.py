"""The chaosd engine on the real embedded cluster with a real chaosd (``../shared/testenv``): each fault's effect
observed on the node's processes, each reverted by the rollback or its timer, nothing left behind (chaosd's own
chains and ipsets included)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from chaosdb.chaosd import actions
from chaosdb.faults import probes
from tests.integration.chaosd_support import (
    answers,
    date_header,
    postmaster,
    reachable,
    replica,
    server_epoch,
    slow_connects,
    state,
)
from tests.polling import poll

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="chaosd runs as root"),
    pytest.mark.skipif(not shutil.which("iptables") or not shutil.which("ipset"),
                       reason="chaosd's network attacks need iptables and ipset (apt-get install iptables ipset)"),
]


def test_stop_freezes_the_node_until_the_rollback(clean, config):
    layout = clean
    name = replica(layout)
    out = actions.stop_processes(target=name, components=["postgres"], configuration=config)
    pm = postmaster(layout, name)
    assert state(pm) == "T" and out["kind"] == "chaosd-stop" and out["attacks"], out
    assert not answers(layout, name), "a stopped postmaster must not answer"
    assert all(answers(layout, n.name) for n in layout.nodes if n.name != name)
    done = actions.revert_attacks(configuration=config)
    assert [r["id"] for r in done["reverted"]] == [out["fault_id"]], done
    assert state(pm) in ("S", "R") and poll(lambda: answers(layout, name), 30)


def test_a_timed_stop_reverts_itself(clean, config):
    layout = clean
    name = replica(layout)
    actions.stop_processes(target=name, components=["postgres"], duration_s=3, configuration=config)
    pm = postmaster(layout, name)
    assert state(pm) == "T"
    assert poll(lambda: state(pm) != "T", 60), "the timer did not recover the stop"
    assert poll(lambda: probes.no_fault_residue(), 30), "the timer's reverter did not end after its revert"
    reverted = actions.revert_attacks(configuration=config)["reverted"]
    assert [r.get("reverted_by") for r in reverted] == ["timer"], reverted  # the rollback reports the timer's work


def test_clock_skew_shows_in_the_target_only(clean, config):
    """etcd (Go) and Patroni (Python) of the skewed node date their answers an hour back; the other nodes' and this
    machine's clocks stay true. PostgreSQL backends forked after the injection read the true time (measured: the
    patch is on the processes running at injection, and a backend is a new process)."""
    layout = clean
    name = replica(layout)
    node, other = layout.node(name), next(n for n in layout.nodes if n.name != name)
    out = actions.skew_clock(target=name, offset_s=-3600, configuration=config)
    assert out["params"]["offset_s"] == -3600 and len(out["attacks"]) >= 3, out
    now = time.time()
    for url in (f"http://{node.host}:{node.etcd_client_port}/version", f"http://{node.host}:{node.api_port}/health"):
        assert abs(now - date_header(url) - 3600) < 60, url
    for url in (f"http://{other.host}:{other.etcd_client_port}/version",
                f"http://{other.host}:{other.api_port}/health"):
        assert abs(now - date_header(url)) < 60, url
    assert abs(server_epoch(layout, name) - time.time()) < 60, "a new backend inherited the skew"
    actions.revert_attacks(configuration=config)
    assert abs(time.time() - date_header(f"http://{node.host}:{node.etcd_client_port}/version")) < 60, \
        "the clock was not restored"


def test_partition_cuts_exactly_that_node(clean, config):
    layout = clean
    name = replica(layout)
    node = layout.node(name)
    out = actions.partition_node(target=name, configuration=config)
    assert out["params"] == {"address": node.host, "device": "lo", "direction": "both", "via": "chaosd"}, out

    assert not reachable(node.host, node.pg_port)
    others = [n for n in layout.nodes if n.name != name]
    assert all(reachable(n.host, n.pg_port) for n in others)
    assert any(r.startswith("ipset chaos-") for r in probes.fault_residue()["chaosd"])
    actions.revert_attacks(configuration=config)
    assert reachable(node.host, node.pg_port)
    assert probes.fault_residue()["chaosd"] == [], "chaosd's chains and ipset must go with the fault"


def test_random_loss_without_netem_until_the_rollback(clean, config):
    """chaosd's user_defined attack with an iptables statistic rule: some connections to the node need a
    retransmission (none before, none after); the rule is tagged so the residue probe would see it."""
    layout = clean
    node = layout.node(replica(layout))
    assert slow_connects(node.host, node.pg_port) == 0
    out = actions.drop_packets(target=node.name, probability=0.5, direction="both", configuration=config)
    assert len(out["attacks"]) == 2 and any(out["params"]["tag"] in r for r in probes.fault_residue()["iptables"])
    assert slow_connects(node.host, node.pg_port) >= 3
    actions.revert_attacks(configuration=config)
    assert probes.fault_residue()["iptables"] == [] and slow_connects(node.host, node.pg_port) == 0


def _stress_processes(name: str) -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _comm(int(p)).startswith(name)]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_cpu_stress_runs_on_the_machine_until_the_rollback(clean, config):
    before = set(_stress_processes("stress-ng"))
    out = actions.stress_cpu(target="leader", workers=1, load=50, configuration=config)
    assert poll(lambda: set(_stress_processes("stress-ng")) - before, 30), "no stress-ng started"
    actions.revert_attacks(configuration=config)
    assert poll(lambda: not set(_stress_processes("stress-ng")) - before, 30), out


def test_memory_stress_holds_memory_until_the_rollback(clean, config):
    def held_kb() -> int:
        total = 0
        for pid in _stress_processes("memStress"):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        return total

    actions.stress_memory(target="leader", size_mb=64, configuration=config)
    assert poll(lambda: held_kb() >= 48 * 1024, 60), held_kb()
    actions.revert_attacks(configuration=config)
    assert poll(lambda: not _stress_processes("memStress"), 30)


def test_disk_fill_allocates_the_file_until_the_rollback(clean, config):
    layout = clean
    name = replica(layout)
    out = actions.fill_disk(target=name, size_mb=16, configuration=config)
    path = Path(out["params"]["path"])
    assert path.parent == layout.node(name).path
    assert poll(lambda: path.exists() and path.stat().st_size >= 16 << 20, 30)
    actions.revert_attacks(configuration=config)
    assert poll(lambda: not path.exists(), 30)


def test_kill_ends_the_process_and_patroni_brings_postgres_back(clean, config):
    layout = clean
    name = replica(layout)
    pm = postmaster(layout, name)
    out = actions.kill_processes(target=name, components=["postgres"], configuration=config)
    assert pm in out["params"]["pids"]
    assert poll(lambda: state(pm) in ("gone", "Z"), 30)
    assert poll(lambda: answers(layout, name), 120), "Patroni did not restart the killed PostgreSQL"


def test_bad_input_is_refused_before_chaosd_is_asked(clean, config):
    from chaosdb.core.arguments import problems_in_call
    from chaosdb.core.errors import ChaosDBError

    # what chaos validate says
    assert problems_in_call(actions.skew_clock, {"offset_s": 0}) == ["offset_s must not be 0: a skew of 0 s changes "
                                                                     "nothing"]
    assert "workers must be >= 1 and <= 1024, got 5000" in " ".join(problems_in_call(actions.stress_cpu, {"workers": 5000}))
    assert "direction must be" in " ".join(problems_in_call(actions.partition_node, {"direction": "sideways"}))
    # and the action itself, called with a value only known at run time
    with pytest.raises(ChaosDBError, match="offset_s must not be 0"):
        actions.skew_clock(target="leader", offset_s=0, configuration=config)
    with pytest.raises(ChaosDBError, match="no chaosd answers at http://127.0.0.1:1"):
        actions.stop_processes(target="leader", chaosd_url="http://127.0.0.1:1", configuration=config)
    with pytest.raises(ChaosDBError, match="unknown target node9: selectors are"):
        actions.stop_processes(target="node9", configuration=config)


def test_a_skewed_process_that_exits_needs_no_recovery(clean, config):
    """Under load, backends come and go: a skew of one that has exited since is over (chaosd cannot recover it: it
    looks for the process); the rollback recovers the others and succeeds."""
    layout = clean
    name = replica(layout)
    conn = psycopg.connect(layout.node_dsn(name), autocommit=True)
    backend = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
    out = actions.skew_clock(target=name, offset_s=-600, components=["postgres"], configuration=config)
    assert backend in out["params"]["pids"]
    conn.close()
    assert poll(lambda: state(backend) == "gone", 30)
    done = actions.revert_attacks(configuration=config)
    assert [r["id"] for r in done["reverted"]] == [out["fault_id"]], done
    assert probes.no_fault_residue()


def _ended_pid() -> int:
    proc = subprocess.Popen(["sleep", "30"])
    proc.kill()
    proc.wait()
    return proc.pid


def test_an_attack_on_a_process_that_ended_says_so(chaosd):
    """chaosd answers a process attack on a pid no process has with 'process N not found': the client says which
    process ended (the actions leave it out: a backend closing, children of a killed postmaster exiting)."""
    from chaosdb.core.chaosd import Chaosd, ProcessEnded

    pid = _ended_pid()
    with pytest.raises(ProcessEnded, match=f"process {pid} has ended") as caught:
        Chaosd(chaosd).attack("process", {"action": "kill", "process": str(pid), "signal": 9})
    assert caught.value.process == str(pid)


def test_kill_of_every_postgres_process_leaves_out_those_that_ended_with_the_postmaster(clean, config):
    """Killing the postmaster ends its backends: attacks on them that come after are left out, named in 'ended'."""
    layout = clean
    name = replica(layout)
    conns = [psycopg.connect(layout.node_dsn(name), autocommit=True) for _ in range(3)]
    try:
        backends = {int(c.execute("SELECT pg_backend_pid()").fetchone()[0]) for c in conns}
        out = actions.kill_processes(target=name, components=["postgres"], configuration=config)
    finally:
        for c in conns:
            c.close()
    assert backends <= set(out["params"]["pids"])
    ended = {int(p) for p in out["params"].get("ended", [])}
    assert ended <= set(out["params"]["pids"]) and len(out["attacks"]) + len(ended) == len(out["params"]["pids"])
    assert poll(lambda: all(state(p) in ("gone", "Z") for p in backends), 30)
    assert poll(lambda: answers(layout, name), 120), "Patroni did not restart the killed PostgreSQL"
