"""C programs shipped with the pack, compiled here as static binaries with this machine's C compiler (``$CC``,
else ``cc``): ``cc -static -Os -s``. A static binary needs nothing else in its image."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import system_value
from chaosdb.shipped import shipped_dir

__all__ = ["STATIC_FLAGS", "compiler", "compiler_identity", "static_libc", "shipped_source", "compile_static"]

#: how every shipped C program is compiled
STATIC_FLAGS = ("-static", "-Os", "-s", "-Wall", "-Wextra")


def compiler() -> str:
    """The C compiler to use: ``$CC`` or ``cc``."""
    return system_value("CC") or "cc"


def compiler_identity() -> str:
    """The compiler's version line and target (part of a compiled layer's cache key)."""
    cc = compiler()
    try:
        version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
        target = subprocess.run([cc, "-dumpmachine"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ChaosDBError(f"cannot run the C compiler {cc!r}: {exc}") from None
    return f"{version.splitlines()[0] if version else cc} / {target.strip()}"


def static_libc() -> bool:
    """Whether the compiler finds a static C library (``libc.a``; Debian's ``libc6-dev`` has it)."""
    cc = compiler()
    if not shutil.which(cc):
        return False
    try:
        found = subprocess.run([cc, "-print-file-name=libc.a"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return os.path.isabs(found.stdout.strip()) and os.path.isfile(found.stdout.strip())


def shipped_source(relative: str) -> Path:
    """A C source of the shipped images folder (``pause/pause.c``)."""
    path = shipped_dir() / "images" / relative
    if not path.is_file():
        raise ChaosDBError(f"the shipped C source {relative} is missing from {shipped_dir() / 'images'}: reinstall "
                           "chaostoolkit-db")
    return path


def compile_static(source: Path, output: Path, timeout: float = 300.0) -> Path:
    """Compile *source* into the static binary *output*; an error with the compiler's messages when it fails."""
    argv = [compiler(), *STATIC_FLAGS, "-o", str(output), str(source)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ChaosDBError(f"cannot compile {source.name}: {exc}") from None
    if done.returncode != 0:
        messages = " / ".join(line for line in done.stderr.splitlines() if line.strip())[-600:]
        raise ChaosDBError(f"{' '.join(argv[:2])} ... {source.name} failed (exit {done.returncode}): {messages}")
    return output
