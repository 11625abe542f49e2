"""iptables chains and rules of faults, tagged so that they can always be found again.

Every chain the pack creates is named ``CHAOSDB-<fault id>[-suffix]`` and every
rule it puts into a built-in chain jumps to such a chain and carries the comment
``chaosdb:<fault id>``. ``remove_tagged`` deletes all of them whatever the records say.
"""

from __future__ import annotations

import shlex
import subprocess
from typing import Sequence

from chaosdb.core.errors import ChaosDBError
from chaosdb.faults.host import require_tool

__all__ = ["CHAIN_PREFIX", "TABLES", "iptables", "create_chain", "append_rule", "hook_chain", "remove_chain",
           "tagged_rules", "remove_tagged", "chain_counters"]

CHAIN_PREFIX = "CHAOSDB-"
TABLES = ("filter", "mangle", "nat")


def iptables(table: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``iptables -w 5 -t TABLE ARGS``; with *check* a failure is refused with iptables' own words."""
    exe = require_tool("iptables", "iptables")
    proc = subprocess.run([exe, "-w", "5", "-t", table, *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise ChaosDBError(f"iptables -t {table} {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def create_chain(table: str, chain: str) -> None:
    """Create *chain* in *table*, or empty it when it exists."""
    if iptables(table, "-N", chain, check=False).returncode != 0:
        iptables(table, "-F", chain)


def append_rule(table: str, chain: str, rule: Sequence[str]) -> None:
    """Append *rule* to *chain* of *table*."""
    iptables(table, "-A", chain, *rule)


def hook_chain(table: str, parent: str, chain: str, fault_id: str) -> None:
    """Jump from built-in *parent* to *chain*, first in line, tagged with the fault id."""
    iptables(table, "-I", parent, "1", "-m", "comment", "--comment", f"chaosdb:{fault_id}", "-j", chain)


def remove_chain(table: str, parent: str, chain: str, fault_id: str) -> bool:
    """Unhook and delete *chain*; True if something was removed. Idempotent."""
    removed = False
    while iptables(table, "-D", parent, "-m", "comment", "--comment", f"chaosdb:{fault_id}", "-j", chain,
                   check=False).returncode == 0:
        removed = True
    if iptables(table, "-F", chain, check=False).returncode == 0:
        removed = True
        iptables(table, "-X", chain, check=False)
    return removed


def _rules(table: str) -> list[str]:
    proc = iptables(table, "-S", check=False)
    return proc.stdout.splitlines() if proc.returncode == 0 else []


def tagged_rules() -> list[str]:
    """``table: rule`` for every chain and rule of ours on the host."""
    found = []
    for table in TABLES:
        for line in _rules(table):
            if CHAIN_PREFIX in line or "chaosdb:" in line:
                if line.startswith("-A " + CHAIN_PREFIX):
                    continue  # rules inside our chains are listed with their chain
                found.append(f"{table}: {line}")
    return found


def remove_tagged() -> list[str]:
    """Delete every rule and chain of ours, whatever the records say; return what was removed."""
    removed = []
    for table in TABLES:
        lines = _rules(table)
        for line in lines:
            if line.startswith("-A ") and not line.startswith("-A " + CHAIN_PREFIX) and (
                    "chaosdb:" in line or f"-j {CHAIN_PREFIX}" in line):
                args = shlex.split(line)
                args[0] = "-D"
                if iptables(table, *args, check=False).returncode == 0:
                    removed.append(f"{table}: {line}")
        chains = [ln.split()[1] for ln in lines if ln.startswith("-N " + CHAIN_PREFIX)]
        for chain in chains:
            iptables(table, "-F", chain, check=False)
        for chain in chains:
            if iptables(table, "-X", chain, check=False).returncode == 0:
                removed.append(f"{table}: -X {chain}")
    return removed


def chain_counters(table: str, chain: str) -> list[dict[str, int]]:
    """Packets and bytes matched by each rule of *chain* (for the fault's record of what it did)."""
    proc = iptables(table, "-L", chain, "-v", "-n", "-x", check=False)
    out = []
    for line in proc.stdout.splitlines()[2:]:
        parts = line.split()
        if len(parts) >= 3 and parts[0].isdigit():
            out.append({"packets": int(parts[0]), "bytes": int(parts[1]), "target": parts[2]})
    return out
