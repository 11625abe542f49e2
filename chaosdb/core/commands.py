"""Running external commands (CLIs such as ``cockroach`` or ``kubectl``): always an argv list, never a
shell; errors name the command (passwords in ``--url`` masked) and end with what it printed last."""

from __future__ import annotations

import ctypes
import subprocess
from typing import Callable

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.redact import redact_dsn

__all__ = ["describe_argv", "run_argv", "run_argv_full", "die_with_parent", "restore_default_sigint"]


def describe_argv(argv: list[str], words: int = 5) -> str:
    """The first *words* of a command for messages, with any ``--url`` password masked."""

    shown = [f"--url={redact_dsn(a[6:])}" if a.startswith("--url=") else a for a in argv[:words]]
    return " ".join(shown) + (" ..." if len(argv) > words else "")


def run_argv(argv: list[str], timeout: float = 30.0, input_text: str | None = None) -> str:
    """Run *argv*; its stdout, or a :class:`ChaosDBError` with the last lines it printed."""
    return run_argv_full(argv, timeout, input_text)[0]


def run_argv_full(argv: list[str], timeout: float | None = 30.0, input_text: str | None = None) -> tuple[str, str]:
    """Run *argv*; (stdout, stderr), or a :class:`ChaosDBError` with the last lines it printed."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input_text)
    except FileNotFoundError:
        raise ChaosDBError(f"cannot run {argv[0]}: not found (install it or configure its path)") from None
    except subprocess.TimeoutExpired:
        raise ChaosDBError(f"{describe_argv(argv)} did not answer within {timeout or 0:g} s") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + "\n" + proc.stdout).strip().splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.lower().startswith(("error", "fatal"))][:2]
        shown = errors + [ln for ln in lines[-3:] if ln not in errors]
        raise ChaosDBError(f"{describe_argv(argv)} failed (exit {proc.returncode}): "
                           + (" / ".join(shown) if shown else "no output"))
    return proc.stdout, proc.stderr


PR_SET_PDEATHSIG = 1
SIGINT, SIG_DFL = 2, 0


def restore_default_sigint() -> None:
    """A ``preexec_fn``: give the child SIGINT's default disposition back.

    A caller started with SIGINT ignored (``nohup cmd &``, cron, some CI runners) passes SIG_IGN on, and a
    Python child then never installs its KeyboardInterrupt handler, so a Ctrl-C forwarded to it is lost.
    Uses libc directly: ``signal.signal`` is refused outside the main thread, and Popen may run in any.
    """
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).signal(SIGINT, SIG_DFL)
    except OSError:
        pass


def die_with_parent(sig: int) -> Callable[[], None]:
    """A ``preexec_fn`` that makes the kernel send *sig* to the child when its parent dies
    (``PR_SET_PDEATHSIG``), so that a killed caller never leaves its child running unattended. The child
    also gets SIGINT's default disposition back (see :func:`restore_default_sigint`): a child we may
    interrupt must not inherit an ignored SIGINT."""
    def preexec() -> None:  # runs in the child between fork and exec
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
        except OSError:
            pass
        restore_default_sigint()

    return preexec
