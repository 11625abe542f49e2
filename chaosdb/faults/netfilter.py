"""iptables chains and rules of faults, tagged so that they can always be found again.

Every chain the pack creates is named ``CHAOSDB-<fault id>-<cluster tag>[-suffix]`` (the tag: six hex digits of
the cluster folder's path, :func:`cluster_tag`) and every rule it puts into a built-in chain
jumps to such a chain and carries the comment ``chaosdb:<fault id>``. ``remove_tagged`` deletes all of them whatever
the records say, or only one cluster's (its tag).
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Sequence

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.home import path_tag
from chaosdb.faults.host import require_tool

__all__ = ["CHAIN_PREFIX", "TABLES", "cluster_tag", "chain_name", "iptables", "create_chain", "append_rule", "hook_chain", "remove_chain",
           "tagged_rules", "remove_tagged", "chain_counters", "Batch", "remove_chains"]

CHAIN_PREFIX = "CHAOSDB-"
TABLES = ("filter", "mangle", "nat")


def cluster_tag(cluster_dir: str | Path) -> str:
    """The tag a fault on the cluster in *cluster_dir* carries in its iptables chains' names (``000000``: no
    cluster named), so they are found per cluster even without their record."""
    return path_tag(cluster_dir) if cluster_dir else "000000"


def chain_name(fault_id: str, tag: str, suffix: str = "") -> str:
    """The name of a fault's chain (at most 28 characters, iptables' limit)."""
    return f"{CHAIN_PREFIX}{fault_id}-{tag}" + (f"-{suffix}" if suffix else "")


def _chain_of(line: str) -> str:
    """The chain of ours an ``iptables -S`` line declares (``-N``) or jumps to (``-j``), or ""."""
    parts = line.split()
    for flag in ("-N", "-j", "-A"):
        if flag in parts:
            i = parts.index(flag)
            if i + 1 < len(parts) and parts[i + 1].startswith(CHAIN_PREFIX):
                return parts[i + 1]
    return ""


def _tagged(chain: str, tag: str) -> bool:
    return bool(chain) and (not tag or chain.split("-")[2:3] == [tag])


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


class Batch:
    """Chains, rules and hooks collected first and applied by one ``iptables-restore --noflush`` (one exec, and
    each table's part all or nothing) instead of one ``iptables`` exec per rule: a fault is in effect as soon as
    the one call returns."""

    def __init__(self) -> None:
        self.lines: dict[str, list[str]] = {}

    def _add(self, table: str, args: Sequence[str]) -> None:
        bad = [a for a in args if not a or any(c.isspace() or c in "\"'" for c in a)]
        if bad:
            raise ChaosDBError(f"iptables argument(s) {bad} cannot go through iptables-restore")
        self.lines.setdefault(table, []).append(" ".join(args))

    def chain(self, table: str, chain: str) -> None:
        """Create *chain* (empty)."""
        self.lines.setdefault(table, []).insert(0, f":{chain} - [0:0]")

    def rule(self, table: str, chain: str, rule: Sequence[str]) -> None:
        """Append *rule* to *chain*."""
        self._add(table, ["-A", chain, *rule])

    def hook(self, table: str, parent: str, chain: str, fault_id: str) -> None:
        """Jump from built-in *parent* to *chain*, first in line, tagged with the fault id."""
        self._add(table, ["-I", parent, "1", "-m", "comment", "--comment", f"chaosdb:{fault_id}", "-j", chain])

    def text(self) -> str:
        """The ``iptables-restore`` input: one ``*table ... COMMIT`` block per table."""
        return "".join(f"*{table}\n" + "".join(line + "\n" for line in lines) + "COMMIT\n"
                       for table, lines in self.lines.items())

    def apply(self) -> None:
        """Apply everything with one ``iptables-restore -w 5 --noflush``; refused with its own words on failure."""
        if not self.lines:
            return
        exe = require_tool("iptables-restore", "iptables")
        proc = subprocess.run([exe, "-w", "5", "--noflush"], input=self.text(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise ChaosDBError(f"iptables-restore failed: {proc.stderr.strip() or proc.stdout.strip()}")


def remove_chains(chains: Sequence[dict[str, str]], fault_id: str) -> bool:
    """Unhook and delete every ``{"table", "chain", "parent"}`` of a fault with one ``iptables-restore`` (its
    hooks, then its chains emptied, then deleted); when that is refused (something was removed by hand already),
    one by one, idempotently. True if something was removed."""
    batch = Batch()
    for c in chains:
        if c.get("parent"):
            batch._add(c["table"], ["-D", c["parent"], "-m", "comment", "--comment", f"chaosdb:{fault_id}", "-j",
                                    c["chain"]])
    for c in chains:
        batch._add(c["table"], ["-F", c["chain"]])
    for c in reversed(chains):  # a chain others jump to goes after them
        batch._add(c["table"], ["-X", c["chain"]])
    if chains:
        try:
            batch.apply()
            return True
        except ChaosDBError:
            pass
    removed = False
    for c in reversed(chains):
        removed |= remove_chain(c["table"], c.get("parent", ""), c["chain"], fault_id)
    return removed


def _rules(table: str) -> list[str]:
    proc = iptables(table, "-S", check=False)
    return proc.stdout.splitlines() if proc.returncode == 0 else []


def tagged_rules(tag: str = "") -> list[str]:
    """``table: rule`` for every chain and rule of ours on the host (*tag*: only one cluster's)."""
    found = []
    for table in TABLES:
        for line in _rules(table):
            if CHAIN_PREFIX in line or "chaosdb:" in line:
                if line.startswith("-A " + CHAIN_PREFIX):
                    continue  # rules inside our chains are listed with their chain
                if tag and not _tagged(_chain_of(line), tag):
                    continue
                found.append(f"{table}: {line}")
    return found


def remove_tagged(tag: str = "") -> list[str]:
    """Delete every rule and chain of ours (*tag*: only one cluster's), whatever the records say; return what was
    removed."""
    removed = []
    for table in TABLES:
        lines = _rules(table)
        for line in lines:
            if line.startswith("-A ") and not line.startswith("-A " + CHAIN_PREFIX) and (
                    "chaosdb:" in line or f"-j {CHAIN_PREFIX}" in line):
                if tag and not _tagged(_chain_of(line), tag):
                    continue
                args = shlex.split(line)
                args[0] = "-D"
                if iptables(table, *args, check=False).returncode == 0:
                    removed.append(f"{table}: {line}")
        chains = [ln.split()[1] for ln in lines if ln.startswith("-N " + CHAIN_PREFIX)
                  and _tagged(ln.split()[1], tag)]
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
