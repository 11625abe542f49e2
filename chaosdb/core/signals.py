"""The signals a process kill may send, by name, wherever the process runs (this machine, a pod)."""

from __future__ import annotations

from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["SIGNALS", "ENDING_SIGNALS", "signal_name"]

#: what ``kill -s NAME`` is given: crash (KILL), graceful stop (TERM, INT, QUIT), pause and resume (STOP, CONT),
#: reload (HUP)
SIGNALS = ("TERM", "KILL", "INT", "QUIT", "STOP", "CONT", "HUP")
#: the signals that end a process (a crash or a graceful stop)
ENDING_SIGNALS = ("KILL", "TERM", "INT", "QUIT")


def signal_name(signal: Any) -> str:
    """``"SIGKILL"`` / ``"kill"`` -> ``"KILL"``; anything else is refused with the list."""
    sig = str(signal).upper().removeprefix("SIG")
    if sig not in SIGNALS:
        raise ChaosDBError(f"signal must be one of {', '.join(SIGNALS)}; got {signal!r}")
    return sig
