"""Starting the server processes of a local cluster and waiting for them (PD, Kubernetes, ...).

A server runs in its own session with its working directory inside the cluster folder (which is how ``down``
finds it again, also after a crash of this program), its output appended to a log file, and a thread reaps it
if it dies while we run.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from chaosdb.core.console import PROGRESS
from chaosdb.core.errors import ChaosDBError

__all__ = ["spawn_server", "wait_ready"]


def spawn_server(argv: list[str], cwd: str | Path, log: str | Path, env: dict[str, str] | None = None) -> int:
    """Start *argv* detached, in *cwd* (created), output appended to *log*; its pid."""
    Path(cwd).mkdir(parents=True, exist_ok=True)
    PROGRESS.info("starting %s (log: %s)", Path(argv[0]).name, log)
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=cwd, env={**os.environ, **env} if env else None)
    threading.Thread(target=proc.wait, daemon=True).start()  # reap it if it dies while we run
    return proc.pid


def wait_ready(check: Callable[[], tuple[bool, str]], deadline: float, failure: str,
               on_timeout: Callable[[], object], every_s: float = 0.2) -> None:
    """Poll *check* (-> ok, why) until ok; at *deadline* call *on_timeout* (stop what was started) and fail with
    *failure* and the last why."""
    while True:
        ok, why = check()
        if ok:
            return
        if time.monotonic() > deadline:
            on_timeout()
            raise ChaosDBError(f"{failure} ({why})")
        time.sleep(every_s)
