"""A run owns the folders it writes (samples, report): two runs never write the same one.

A claim is a file ``.chaosdb-run.json`` in the folder naming the process that owns it (pid and start time, so a
recycled pid is not mistaken for it) and when. :func:`claim` takes a folder that is free, already this run's, or
left by a run that is gone; a folder a live run holds is refused with a sentence that says whose it is and what to
do. :func:`release` gives it back when the run ends.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.processes import start_time

__all__ = ["CLAIM_FILE", "claim", "release", "holder", "busy_message", "OutputFolder"]



class OutputFolder(NamedTuple):
    """What a control module that writes a folder declares as its ``OUTPUT_FOLDER``: the argument naming it, what
    that folder is, how a run gets its own."""

    argument: str
    what: str
    setting: str

CLAIM_FILE = ".chaosdb-run.json"


def _me() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "start": start_time(pid)}


def holder(folder: str | Path) -> dict[str, Any] | None:
    """The live run other than this one that holds *folder*, or None."""
    path = Path(folder) / CLAIM_FILE
    try:
        owner = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # being written by the run that just created it
        try:
            fresh = time.time() - path.stat().st_mtime < 5
        except OSError:
            return None
        return {"pid": "?", "claimed": path.stat().st_mtime} if fresh else None
    me = _me()
    if owner.get("pid") == me["pid"] and owner.get("start") == me["start"]:
        return None
    if not owner.get("pid") or start_time(int(owner["pid"])) != owner.get("start"):
        return None  # that run is gone
    return owner


def busy_message(folder: str | Path, what: str, setting: str = "") -> str:
    """Why *folder* cannot be this run's (another live run holds it), or ""."""
    other = holder(folder)
    if other is None:
        return ""
    since = time.strftime("%H:%M:%S", time.localtime(other.get("claimed", 0)))
    fix = f" ({setting})" if setting else ""
    return (f"{what} {Path(folder).absolute()} is being written by another run (process {other['pid']}, since "
            f"{since}): give this run its own folder{fix}, or wait until that run ends")


def claim(folder: str | Path, what: str, setting: str = "") -> Path:
    """Make *folder* this run's (created if missing), or refuse: *what* names it in the message, *setting* the key
    or variable that gives a run its own folder."""
    if ".." in Path(folder).parts:
        raise ChaosDBError(f"{what} {folder} goes up with '..' (it would be {Path(folder).resolve()}): give the "
                           f"folder without '..'" + (f" ({setting})" if setting else ""))
    path = Path(folder).absolute()
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    _created.setdefault(path, missing)
    for _attempt in range(5):
        try:  # only one run can create the claim
            fd = os.open(path / CLAIM_FILE, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            busy = busy_message(path, what, setting)
            if busy:
                raise ChaosDBError(busy) from None
            if _mine(path):
                return path
            (path / CLAIM_FILE).unlink(missing_ok=True)  # left by a run that is gone
            continue
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps({**_me(), "claimed": time.time()}) + "\n")
        return path
    raise ChaosDBError(f"{what} {path}: could not claim it for this run")


def _mine(path: Path) -> bool:
    try:
        owner = json.loads((path / CLAIM_FILE).read_text())
    except (OSError, ValueError):
        return False
    me = _me()
    return owner.get("pid") == me["pid"] and owner.get("start") == me["start"]


#: folder claimed -> the folders its claim created (removed again when it is given back empty)
_created: dict[Path, list[Path]] = {}


def release(folder: str | Path) -> None:
    """Give *folder* back, when it is this run's; the folders the claim created go again when nothing was written in
    them (a refused run leaves nothing behind)."""
    if _mine(Path(folder)):
        (Path(folder) / CLAIM_FILE).unlink(missing_ok=True)
    for made in _created.pop(Path(folder).absolute(), []):
        try:
            made.rmdir()  # only when empty: what a run wrote stays
        except OSError:
            break
