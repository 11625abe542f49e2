"""Bandwidth limits (and netem delay where the kernel has it) with tc on ``lo``.

One htb root qdisc with handle ``cdb:`` is put on ``lo`` when the first fault needs
it; unclassified packets bypass shaping (htb's direct queue), so only packets a
fault's mangle rules classified (iptables ``CLASSIFY --set-class cdb:<slot>``, which
sets the packet's priority; no tc classifier module is needed) are shaped by that
fault's class ``cdb:<slot>``. The root qdisc goes when its last
class goes. A root qdisc on ``lo`` that is not ours is never touched: the fault is refused.
"""

from __future__ import annotations

import subprocess

from chaosdb.core.errors import ChaosDBError
from chaosdb.faults.host import require_tool

__all__ = ["ROOT_HANDLE", "burst_bytes", "add_class", "remove_class", "our_root",
           "remove_root_if_unused", "class_stats", "DEV"]

DEV = "lo"
ROOT_HANDLE = "cdb:"

def _tc(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    exe = require_tool("tc", "iproute2")
    proc = subprocess.run([exe, *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise ChaosDBError(f"tc {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def _root_line(dev: str = DEV) -> str:
    for line in _tc("qdisc", "show", "dev", dev).stdout.splitlines():
        if " root " in line:
            return line
    return ""


def our_root(dev: str = DEV) -> bool:
    """Whether *dev*'s root qdisc is the htb this engine installs."""
    return _root_line(dev).startswith(f"qdisc htb {ROOT_HANDLE} ")


def _ensure_root(dev: str = DEV) -> None:
    line = _root_line(dev)
    if line.startswith(f"qdisc htb {ROOT_HANDLE} "):
        return
    if line and not line.startswith("qdisc noqueue "):
        raise ChaosDBError(f"{dev} already has a root qdisc that chaosdb did not put there ({line.strip()}): "
                           "remove it or use a host without one for bandwidth/delay faults")
    _tc("qdisc", "add", "dev", dev, "root", "handle", ROOT_HANDLE, "htb")


def _used_slots(dev: str = DEV) -> set[int]:
    used = set()
    for line in _tc("class", "show", "dev", dev, check=False).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2].startswith(ROOT_HANDLE):
            try:
                used.add(int(parts[2].split(":")[1], 16))
            except ValueError:
                pass
    return used


def burst_bytes(rate_kbit: int) -> int:
    """The bucket of a class: 5 ms at its rate, at least 4 KiB, at most 128 KiB. What passes unshaped when the
    fault starts, so a low rate is in effect after a few KiB (not 128 KiB: a minute at 16 kbit/s), and a high rate
    still reaches its rate with the kernel's timer granularity."""
    return int(min(max(int(rate_kbit) * 1000 / 8 * 0.005, 4096), 128 * 1024))


def add_class(rate_kbit: int, delay_ms: float = 0.0, jitter_ms: float = 0.0, dev: str = DEV) -> dict:
    """A shaping class for one fault; returns ``{dev, slot, classid}`` for the record."""
    _ensure_root(dev)
    used = _used_slots(dev)
    free = [s for s in range(1, 16) if s not in used]
    if not free:
        raise ChaosDBError("15 bandwidth/delay faults are already active on lo: revert some first")
    slot = free[0]
    classid = f"{ROOT_HANDLE}{slot:x}"
    rate = f"{max(8, int(rate_kbit))}kbit"
    burst = f"{burst_bytes(rate_kbit)}b"
    _tc("class", "add", "dev", dev, "parent", ROOT_HANDLE, "classid", classid, "htb", "rate", rate, "ceil", rate,
        "burst", burst, "cburst", burst)
    entry = {"dev": dev, "slot": slot, "classid": classid}
    try:
        if delay_ms > 0:
            netem = ["delay", f"{delay_ms}ms"] + ([f"{jitter_ms}ms"] if jitter_ms else [])
            _tc("qdisc", "add", "dev", dev, "parent", classid, "handle", f"{0x100 + slot:x}:", "netem", *netem)
    except ChaosDBError:
        remove_class(entry)
        raise
    return entry


def remove_class(entry: dict) -> None:
    """Remove a bandwidth class the engine added (and its root qdisc when nothing else uses it)."""
    dev = entry.get("dev", DEV)
    if not our_root(dev):
        return
    _tc("class", "del", "dev", dev, "classid", entry["classid"], check=False)
    remove_root_if_unused(dev)


def remove_root_if_unused(dev: str = DEV, force: bool = False) -> bool:
    """Remove the engine's root qdisc of *dev* when no class uses it (or with *force*); whether it was removed."""
    if our_root(dev) and (force or not _used_slots(dev)):
        _tc("qdisc", "del", "dev", dev, "root", check=False)
        return True
    return False


def class_stats(entry: dict) -> dict:
    """Bytes/packets sent and dropped by the fault's class."""
    proc = _tc("-s", "class", "show", "dev", entry.get("dev", DEV), "classid", entry["classid"], check=False)
    stats = {}
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("Sent "):
            parts = line.replace(",", "").replace("(", "").replace(")", "").split()
            try:
                stats = {"bytes": int(parts[1]), "packets": int(parts[3]), "dropped": int(parts[6]),
                         "overlimits": int(parts[8])}
            except (IndexError, ValueError):
                pass
    return stats
