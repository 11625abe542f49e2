"""Revert a fault at its deadline, from a detached process.

``python -m chaosdb.core.faultrecords.reverter --fault-id ID --at EPOCH``

Started by every fault that has a duration, whichever engine made it, in its own session, so that the
fault ends on time even when ``chaos run`` is killed. If the fault was reverted
already (rollback, cleanup), there is nothing to do.
"""

from __future__ import annotations

import argparse
import sys
import time

from chaosdb.core.faultrecords.handlers import revert_handlers
from chaosdb.core.faultrecords.lifecycle import REVERTER_MODULE, keep_timer_result, revert
from chaosdb.core.faultrecords.records import load_record


def main(argv: list[str] | None = None) -> int:
    """``python -m chaosdb.core.faultrecords.reverter``: wait until ``--at`` (epoch seconds), then revert fault
    ``--fault-id`` and leave the result for the rollback."""
    p = argparse.ArgumentParser(prog=f"python -m {REVERTER_MODULE}")
    p.add_argument("--fault-id", required=True)
    p.add_argument("--at", type=float, required=True, help="epoch seconds")
    args = p.parse_args(argv)
    revert_handlers()  # the engines' handlers found now, so the fault ends at its deadline, not some 0.1 s after
    while (left := args.at - time.time()) > 0:
        time.sleep(min(left, 0.1))

    rec = load_record(args.fault_id)
    if rec is not None:  # not reverted already: what the fault did, for the rollback of the run that made it
        keep_timer_result(revert(rec), rec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
