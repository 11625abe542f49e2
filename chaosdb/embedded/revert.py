"""Revert a timed fault from a separate, detached process.

``python -m chaosdb.embedded.revert --cluster-dir DIR --after SECONDS resume node1 [node2 ...]``

A fault with a duration schedules its own revert through this module, so that
the fault ends on time even if the process that injected it (``chaos run``)
is killed. Reverting is idempotent: resuming a running node does nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from chaosdb.core.detach import spawn_detached
from chaosdb.embedded.processes import node_processes, signal_pids
from chaosdb.embedded.state import load_layout

__all__ = ["schedule_revert", "main"]


def schedule_revert(cluster_dir: str, after_s: float, action: str, nodes: list[str]) -> int:
    """Start a detached reverter; return its pid."""
    return spawn_detached([sys.executable, "-m", "chaosdb.embedded.revert", "--cluster-dir", cluster_dir,
                           "--after", f"{after_s:.3f}", action, *nodes])


def _resume(cluster_dir: str, nodes: list[str]) -> None:
    layout = load_layout(cluster_dir)
    for name in nodes:
        node = layout.node(name)
        stopped = [p.pid for p in node_processes(node.path, node.data_dir) if p.state == "T"]
        signal_pids(stopped, signal.SIGCONT)


def main(argv: list[str] | None = None) -> int:
    """``python -m chaosdb.embedded.revert``: wait *after* seconds, then resume the suspended nodes (the detached timer
    of ``suspend_node``)."""
    p = argparse.ArgumentParser(prog="python -m chaosdb.embedded.revert")
    p.add_argument("--cluster-dir", required=True)
    p.add_argument("--after", type=float, default=0.0)
    p.add_argument("action", choices=["resume"])
    p.add_argument("nodes", nargs="+")
    args = p.parse_args(argv)
    deadline = time.monotonic() + args.after
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.2))
    if args.action == "resume":
        _resume(args.cluster_dir, args.nodes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
