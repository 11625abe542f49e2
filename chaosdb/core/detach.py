"""Child processes that run this package's modules (reverters, proxies, Locust).

They find this source tree through ``PYTHONPATH`` even when the package is not
installed; detached ones run in their own session, with no stdio, from ``/``.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from chaosdb.core.settings import process_environment

__all__ = ["source_env", "spawn_detached"]


def source_env(**extra: str) -> dict[str, str]:
    """This process's environment with the source tree first on ``PYTHONPATH``, plus *extra*."""
    env = process_environment()
    src_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = src_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def spawn_detached(argv: list[str], env: dict[str, str] | None = None, pass_fds: tuple[int, ...] = ()) -> int:
    """Start *argv* detached; return its pid. *env* adds to (or replaces in) this process's environment; *pass_fds*
    are handed to it (a listening socket, say), every other descriptor is closed."""
    full = source_env(**(env or {}))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True, pass_fds=pass_fds, env=full, cwd="/")
    # reap it if it exits while we live, so it never lingers as our zombie
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc.pid
