"""Starting the server processes of a local cluster and waiting for them (the embedded cluster's etcd and Patroni,
PD, Kubernetes, CockroachDB nodes, a killed node started again): the one way every local cluster starts one.

A server runs in its own session with its working directory inside the cluster folder (which is how ``down``
finds it again, also after a crash of this program), its output appended to a log file, as the cluster's
unprivileged user when one is given, and a thread reaps it if it dies while we run.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaosdb.core.console import PROGRESS
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import process_environment

__all__ = ["spawn_server", "wait_ready"]


def spawn_server(argv: list[str], cwd: str | Path, log: str | Path | None, env: dict[str, str] | None = None,
                 *, whole_env: bool = False, user: tuple[int, int] | None = None) -> int:
    """Start *argv* detached in a session of its own, in *cwd* (created), its output appended to *log* (mode 0640;
    discarded when None); *env* is added to this process's environment, or with *whole_env* is the whole of it;
    as *user* (uid, gid) when this process is root and another user is given (the log then belongs to it). Its
    pid."""
    Path(cwd).mkdir(parents=True, exist_ok=True)
    PROGRESS.info("starting %s%s", _program(argv), f" (log: {log})" if log else "")
    as_root = os.geteuid() == 0
    other_user = user is not None and as_root and user[0] != os.geteuid()
    kwargs: dict[str, Any] = {"user": user[0], "group": user[1], "extra_groups": []} if user and other_user else {}
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640) if log else None
    try:
        if fd is not None and user is not None and as_root:
            os.fchown(fd, user[0], user[1])
        output = fd if fd is not None else subprocess.DEVNULL
        proc = subprocess.Popen(argv, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=output,
                                stderr=subprocess.STDOUT if fd is not None else subprocess.DEVNULL,
                                env=dict(env or {}) if whole_env else (process_environment(**env) if env else None),
                                start_new_session=True, close_fds=True, **kwargs)
    finally:
        if fd is not None:
            os.close(fd)
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()  # never left a zombie
    return proc.pid


def _program(argv: list[str]) -> str:
    """What a person calls the program of *argv*: its file's name, or the module a Python runs (``-m patroni``)."""
    name = Path(argv[0]).name
    if name.startswith("python") and "-m" in argv[1:-1]:
        return argv[argv.index("-m", 1) + 1]
    return name


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
