"""The members of a layer tar, made the same every time: names relative to the image's root and sorted so that a
folder comes before what it holds, one fixed modification time, numeric owners kept (user and group names
dropped), only extended attributes kept of the extended headers.

:func:`add_files` puts files of this machine into a layer; :func:`copy_normalized` copies another tar (a root
file system from ``mmdebstrap``) into a layer, leaving out what a filter refuses.
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LAYER_MTIME", "FileEntry", "add_files", "copy_normalized", "image_path"]

#: the modification time of every member of a layer (2024-01-01T00:00:00Z)
LAYER_MTIME = 1704067200
#: the extended-header records a layer keeps (extended attributes such as file capabilities)
_KEPT_PAX_PREFIXES = ("SCHILY.xattr.",)


def image_path(name: str) -> str:
    """A tar member's name as a path inside the image: no leading ``./`` or ``/``, no trailing ``/``; the root
    itself is the empty string."""
    name = name.strip()
    while name.startswith(("./", "/")):
        name = name[1:] if name.startswith("/") else name[2:]
    name = name.rstrip("/")
    return "" if name == "." else name


def _order(name: str) -> tuple[str, ...]:
    return tuple(name.split("/"))


@dataclass(frozen=True)
class FileEntry:
    """One file of this machine put into a layer at *path* (absolute inside the image)."""

    path: str
    source: Path
    mode: int = 0o755
    uid: int = 0
    gid: int = 0


def _fixed(info: tarfile.TarInfo, mtime: int) -> tarfile.TarInfo:
    info.mtime = mtime
    info.uname = info.gname = ""
    return info


def add_files(out: tarfile.TarFile, entries: Iterable[FileEntry], mtime: int = LAYER_MTIME) -> None:
    """Add each entry's file to *out*, in path order, with its mode and numeric owner; folders on the way are not
    added (the layer below has them, or the runtime makes them)."""
    for entry in sorted(entries, key=lambda e: _order(image_path(e.path))):
        info = tarfile.TarInfo(image_path(entry.path))
        info.size = Path(entry.source).stat().st_size
        info.mode, info.uid, info.gid = entry.mode, entry.uid, entry.gid
        with open(entry.source, "rb") as data:
            out.addfile(_fixed(info, mtime), data)


def _copy_of(member: tarfile.TarInfo, name: str, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.uid, info.gid = member.type, member.mode, member.uid, member.gid
    info.size = member.size if member.isreg() else 0
    info.linkname = member.linkname if member.issym() else ""
    info.devmajor, info.devminor = member.devmajor, member.devminor
    info.pax_headers = {k: v for k, v in member.pax_headers.items() if k.startswith(_KEPT_PAX_PREFIXES)}
    return _fixed(info, mtime)


def copy_normalized(source: Path, out: tarfile.TarFile, keep: Callable[[str], bool] = lambda path: True,
                    mtime: int = LAYER_MTIME) -> int:
    """Copy the members of the uncompressed tar *source* whose image path (``/usr/bin/x``) *keep* accepts into
    *out*, sorted; the number copied.

    A hard link that sorts before the file it links to carries the data itself, and the file becomes the link, so
    that a reader never meets a link to a file it has not seen."""
    copied = 0
    with tarfile.open(source, mode="r:") as tar:
        by_name = {}
        for member in tar.getmembers():
            name = image_path(member.name)
            if name:
                by_name[name] = member
        carrier: dict[str, str] = {}  # the file a hard link group's data came from -> the member that carries it
        for name in sorted(by_name, key=_order):
            member = by_name[name]
            if not keep(f"/{name}"):
                continue
            if not (member.isreg() or member.islnk()):
                out.addfile(_copy_of(member, name, mtime))
                copied += 1
                continue
            origin = image_path(member.linkname) if member.islnk() else name
            if origin in carrier:
                info = _copy_of(member, name, mtime)
                info.type, info.linkname, info.size = tarfile.LNKTYPE, carrier[origin], 0
                out.addfile(info)
            else:
                data_member = by_name.get(origin)
                if data_member is None or not data_member.isreg():
                    continue  # a link to nothing in the archive: nothing to carry
                info = _copy_of(data_member, name, mtime)
                info.mode, info.uid, info.gid = member.mode, member.uid, member.gid
                out.addfile(info, tar.extractfile(data_member))
                carrier[origin] = name
            copied += 1
    return copied
