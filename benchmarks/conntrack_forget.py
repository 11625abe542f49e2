"""Benchmark: forgetting a cluster's tracked connections on a host that tracks many others, against conntrack-tools.

Every network fault forgets the connection-tracking entries of its cluster's node addresses when it is applied and
when it is reverted (:mod:`chaosdb.faults.conntrack`). The time that takes is added to the fault's start, and to the
moment its record is gone; on a game-day host the table also holds every other connection of the machine.

For each ``--others`` count, that many unrelated TCP entries (127.0.0.201 to 127.0.0.202, a 300 s timeout, so
they expire even if this script is killed) are put in the kernel's table. Then, for ``--rounds`` rounds, the two
contenders alternate, each starting from ``--ours`` entries of three node addresses (127.0.0.181-183) put in the
table just before:

* ``chaosdb``: :func:`chaosdb.faults.conntrack.forget_connections` of the three addresses, in this process;
* ``conntrack``: conntrack-tools, as a person would do it: ``conntrack -D -s ADDRESS`` and ``conntrack -D -d
  ADDRESS`` for each address (six processes).

Each round checks that every entry of the node addresses is gone and no other entry was touched. Reported: the
median seconds of each and their ratio (chaosdb / conntrack; below 1 is faster), with the machine's load. Needs root
and conntrack-tools (``apt-get install conntrack``); removes every entry it made. Usage:
``python benchmarks/conntrack_forget.py [--others 0 5000 20000] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.fault_bench_cluster import write_result  # noqa: E402
from benchmarks.machine_load import MachineWatch  # noqa: E402
from chaosdb.faults.conntrack import forget_connections  # noqa: E402

OURS = ["127.0.0.181", "127.0.0.182", "127.0.0.183"]
OTHER_SRC, OTHER_DST = "127.0.0.201", "127.0.0.202"
TCP = 6
CONFIRMED_AND_SEEN_REPLY = 0x8 | 0x2


def _tuples(src: str, dst: str, count: int, first_port: int) -> list[tuple[str, str, int, int]]:
    return [(src, dst, first_port + i % 40000, 5432 + i // 40000) for i in range(count)]


def _add(entries: list[tuple[str, str, int, int]]) -> None:
    from pyroute2 import NFCTSocket
    from pyroute2.netlink.nfnetlink.nfctsocket import NFCTAttrTuple

    with NFCTSocket() as ct:
        for src, dst, sport, dport in entries:
            ct.entry("add", timeout=300, status=CONFIRMED_AND_SEEN_REPLY,
                     tuple_orig=NFCTAttrTuple(saddr=src, daddr=dst, proto=TCP, sport=sport, dport=dport),
                     tuple_reply=NFCTAttrTuple(saddr=dst, daddr=src, proto=TCP, sport=dport, dport=sport))


def _delete(entries: list[tuple[str, str, int, int]]) -> None:
    from pyroute2 import NFCTSocket
    from pyroute2.netlink.exceptions import NetlinkError
    from pyroute2.netlink.nfnetlink.nfctsocket import NFCTAttrTuple

    with NFCTSocket() as ct:
        for src, dst, sport, dport in entries:
            try:
                ct.entry("del", tuple_orig=NFCTAttrTuple(saddr=src, daddr=dst, proto=TCP, sport=sport, dport=dport))
            except NetlinkError:
                pass  # gone already


def _count(address: str) -> int:
    with open("/proc/net/nf_conntrack") as f:
        return sum(1 for line in f if f"src={address} " in line or f"dst={address} " in line)


def _ours(count: int) -> list[tuple[str, str, int, int]]:
    """*count* entries among the node addresses, as a cluster's peers, clients and replicas make them."""
    out = []
    for i in range(count):
        src, dst = OURS[i % 3], OURS[(i + 1) % 3]
        out.append((src, dst, 30000 + i, 5432))
    return out


def _with_conntrack_tools() -> None:
    for address in OURS:
        for side in ("-s", "-d"):  # exit 1 when there was nothing to delete
            subprocess.run(["conntrack", "-D", side, address], capture_output=True, check=False)


def _with_chaosdb() -> None:
    forget_connections(OURS)


def _round(contender: str, ours: int, others: int) -> float:
    _add(_ours(ours))
    assert all(_count(a) for a in OURS), "the node addresses' entries were not made"
    t0 = time.perf_counter()
    (_with_chaosdb if contender == "chaosdb" else _with_conntrack_tools)()
    took = time.perf_counter() - t0
    left = {a: _count(a) for a in OURS}
    assert not any(left.values()), f"{contender} left entries of the node addresses: {left}"
    assert _count(OTHER_SRC) == others, f"{contender} touched other entries: {_count(OTHER_SRC)} of {others} left"
    return took


def measure(others: int, ours: int, rounds: int) -> dict[str, Any]:
    """The medians and their ratio with *others* unrelated entries in the table."""
    unrelated = _tuples(OTHER_SRC, OTHER_DST, others, 20000)
    _add(unrelated)
    try:
        times: dict[str, list[float]] = {"chaosdb": [], "conntrack": []}
        with MachineWatch() as watch:
            for r in range(rounds):
                order = ("chaosdb", "conntrack") if r % 2 == 0 else ("conntrack", "chaosdb")
                for contender in order:
                    times[contender].append(_round(contender, ours, others))
        med = {k: statistics.median(v) for k, v in times.items()}
        return {"others": others, "ours": ours, "rounds": rounds,
                "chaosdb_s": round(med["chaosdb"], 4), "conntrack_s": round(med["conntrack"], 4),
                "ratio": round(med["chaosdb"] / med["conntrack"], 3) if med["conntrack"] else None,
                "all_s": {k: [round(x, 4) for x in v] for k, v in times.items()}, "machine": watch.result()}
    finally:
        _delete(unrelated)
        _delete(_ours(ours))


def main() -> int:
    """Run the measurement for each ``--others`` count; print and write the results."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--others", type=int, nargs="+", default=[0, 5000, 20000])
    p.add_argument("--ours", type=int, default=60, help="entries of the node addresses per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / f"results-conntrack_forget-{datetime.date.today()}.json"))
    args = p.parse_args()
    if not shutil.which("conntrack"):
        print("conntrack-tools is needed as the peer: apt-get install conntrack", file=sys.stderr)
        return 2
    version = subprocess.run(["conntrack", "--version"], capture_output=True, text=True).stdout.strip()
    results = [measure(n, args.ours, args.rounds) for n in args.others]
    write_result({"peer": version, "results": results}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
