"""Choosing fault targets by role when an action runs, and the quorum safety rule.

A *target* is a database node seen the same way by every database adapter and
every fault engine: a name, the roles it has right now (``leader``,
``replica``, ``etcd-leader``, ...), whether it is up, and free-form details
(addresses, pids, pod name) that the engine needs to reach it.

Selectors (the ``target`` argument of node actions):

=================  =======================================================
``leader``         the current leader / primary (``primary`` is a synonym)
``replica``        nodes that replicate from the leader (``follower``)
``etcd-leader``    the node whose etcd member leads the etcd Raft group
``etcd-follower``  nodes whose etcd member follows
``any``            every node, taken in name order
``random``         every node, taken in random order
``node1,node3``    explicit node names (comma separated, or a list)
=================  =======================================================

``count`` is how many of the matching nodes to take (an int, or ``"all"``).
"""

from __future__ import annotations

import random as _random
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from chaosdb.core.errors import ChaosDBError, UnsafeFault

__all__ = [
    "Target",
    "ROLE_SELECTORS",
    "SINGULAR_SELECTORS",
    "select_targets",
    "tolerated_failures",
    "check_quorum",
    "parse_count",
]

#: selector -> role a node must have (None = every node)
ROLE_SELECTORS: dict[str, str | None] = {
    "leader": "leader",
    "primary": "leader",
    "replica": "replica",
    "follower": "replica",
    "etcd-leader": "etcd-leader",
    "etcd-follower": "etcd-follower",
    "any": None,
    "random": None,
}
#: selectors only one node matches at a time: a target of one takes count 1 (or "all")
SINGULAR_SELECTORS = frozenset({"leader", "primary", "etcd-leader"})


@dataclass
class Target:
    """One node of a cluster as fault actions see it."""

    name: str
    roles: set[str] = field(default_factory=set)
    up: bool = True
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        # "node" is the name's old key (deprecated, kept until the next release)
        """The target as an action's result names it (``node`` is the old key of ``name``, kept until the next release).
        """
        return {"name": self.name, "node": self.name, "roles": sorted(self.roles), "up": self.up, **self.details}


def parse_count(count: int | str) -> int | None:
    """``"all"`` -> None (no limit); a positive int (or its string) -> that int."""
    if isinstance(count, str):
        if count.strip().lower() == "all":
            return None
        try:
            count = int(count)
        except ValueError:
            raise ChaosDBError(f"count must be a positive integer or 'all', got {count!r}") from None
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ChaosDBError(f"count must be a positive integer or 'all', got {count!r}")
    return count


def _names(selector: str | Sequence[str]) -> list[str] | None:
    if isinstance(selector, str):
        if selector.strip().lower() in ROLE_SELECTORS:
            return None
        return [s.strip() for s in selector.split(",") if s.strip()]
    return [str(s) for s in selector]


def select_targets(
    nodes: Sequence[Target],
    selector: str | Sequence[str],
    count: int | str = 1,
    rng: _random.Random | None = None,
) -> list[Target]:
    """Pick the nodes a fault hits, from the cluster as it is now.

    Raises :class:`ChaosDBError` (before anything is injected) when the
    selector is unknown, names a node that does not exist, or fewer nodes
    than ``count`` currently have the role.
    """
    if not nodes:
        raise ChaosDBError("the cluster has no nodes to choose a target from")
    limit = parse_count(count)
    by_name = {n.name: n for n in nodes}
    names = _names(selector)
    if names is not None:
        if not names:
            raise ChaosDBError("target is empty: give a role (leader, replica, ...) or node names")
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise ChaosDBError(
                f"unknown target {', '.join(unknown)}: selectors are {', '.join(ROLE_SELECTORS)} "
                f"or node names ({', '.join(sorted(by_name))})"
            )
        chosen = [by_name[n] for n in dict.fromkeys(names)]
        if limit is not None and limit < len(chosen):
            chosen = chosen[:limit]
        return chosen

    key = str(selector).strip().lower()
    role = ROLE_SELECTORS[key]
    matching = sorted((n for n in nodes if role is None or role in n.roles), key=lambda n: n.name)
    if key == "random":
        (rng or _random.Random()).shuffle(matching)
    if not matching:
        present = ", ".join(f"{n.name}={'/'.join(sorted(n.roles)) or 'no role'}" for n in nodes)
        raise ChaosDBError(f"no node has the role '{key}' right now ({present})")
    if limit is not None and len(matching) < limit:
        raise ChaosDBError(
            f"asked for {limit} node(s) with role '{key}' but only {len(matching)} have it: "
            + ", ".join(n.name for n in matching)
        )
    return matching if limit is None else matching[:limit]


def tolerated_failures(members: int) -> int:
    """How many of *members* a majority-quorum group can lose and keep a quorum."""
    return max(0, (members - 1) // 2)


def check_quorum(
    nodes: Iterable[Target],
    targets: Iterable[Target],
    allow_quorum_loss: bool = False,
    what: str = "take down",
) -> dict[str, Any]:
    """Refuse a fault that would leave fewer than a majority of nodes up.

    Nodes already down count against the budget. Returns the arithmetic so the
    fault record shows why the fault was allowed.
    """
    nodes = list(nodes)
    targets = list(targets)
    down = {n.name for n in nodes if not n.up}
    after = down | {t.name for t in targets}
    tolerated = tolerated_failures(len(nodes))
    verdict = {
        "members": len(nodes),
        "tolerated_failures": tolerated,
        "already_down": sorted(down),
        "down_after_fault": sorted(after),
        "allowed_by_quorum_rule": len(after) <= tolerated,
    }
    if len(after) > tolerated and not allow_quorum_loss:
        raise UnsafeFault(
            f"refusing to {what} {', '.join(t.name for t in targets)}: {len(after)} of {len(nodes)} members "
            f"would be down ({', '.join(sorted(after))}) but a majority quorum tolerates only {tolerated}. "
            "Wait until the cluster is healthy, pick fewer targets, or set allow_quorum_loss=true "
            "if losing quorum is the point of the experiment."
        )
    return verdict
