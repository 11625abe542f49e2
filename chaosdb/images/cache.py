"""Where built images and their parts are kept, named by what they were built from.

The folder is ``$CHAOSDB_IMAGE_CACHE``, else ``/var/cache/chaosdb/images`` for root, else
``$XDG_CACHE_HOME/chaosdb/images`` or ``~/.cache/chaosdb/images``. In it:

* ``blobs/sha256/<hex>``: every layer, config and manifest, once (:class:`~chaosdb.images.oci.BlobStore`);
* ``layers/<key>.json``: a layer built from inputs whose key is ``<key>`` (its blob, and what it holds);
* ``images/<key>/``: an image built from inputs whose key is ``<key>``: ``image.json``, the OCI layout
  ``layout/`` and the archive ``<name>-<tag>.tar``;
* ``debs/``: Debian packages downloaded by earlier builds, offered to the next one;
* ``tmp/`` and ``locks/``: a build's scratch space and the locks that keep two builds of one key apart.

A key is the sha256 of the inputs written as canonical JSON: the same recipe, the same binaries and the same
builder give the same key, anything else another one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from chaosdb.core.settings import env_value, system_value
from chaosdb.images.oci import BlobStore

__all__ = ["default_cache_dir", "cache_key", "file_sha256", "ImageCache"]


def default_cache_dir() -> Path:
    """The image cache folder (not created here)."""
    env = env_value("CHAOSDB_IMAGE_CACHE")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/cache/chaosdb/images")
    xdg = system_value("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "chaosdb" / "images"


def cache_key(inputs: Mapping[str, Any]) -> str:
    """The key of *inputs*: the hex sha256 of their canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for chunk in iter(lambda: data.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class ImageCache:
    """The cache folder: its blob store, its layer and image records, its scratch space and locks."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root else default_cache_dir()
        self.blobs = BlobStore(self.root / "blobs")
        self.debs = self.root / "debs"

    def image_dir(self, key: str) -> Path:
        """The folder of the image built from inputs with *key*."""
        return self.root / "images" / key

    def layer_record(self, key: str) -> dict[str, Any] | None:
        """The record of the layer built from inputs with *key*, when it and its blob are still there."""
        record = self._read(self.root / "layers" / f"{key}.json")
        return record if record and self.blobs.has(str(record["layer"]["digest"])) else None

    def save_layer_record(self, key: str, record: Mapping[str, Any]) -> None:
        """Remember the layer built from inputs with *key*."""
        self._write(self.root / "layers" / f"{key}.json", record)

    def image_record(self, key: str) -> dict[str, Any] | None:
        """The record of the image built from inputs with *key*, when it and its archive are still there."""
        record = self._read(self.image_dir(key) / "image.json")
        return record if record and Path(record.get("archive", "")).is_file() else None

    def save_image_record(self, key: str, record: Mapping[str, Any]) -> None:
        """Remember the image built from inputs with *key* (written last: a record means a complete image)."""
        self._write(self.image_dir(key) / "image.json", record)

    def image_records(self) -> list[dict[str, Any]]:
        """Every complete image in the cache, newest first."""
        found = [self.image_record(p.name) for p in sorted((self.root / "images").glob("*")) if p.is_dir()]
        return sorted((r for r in found if r), key=lambda r: str(r.get("built_at", "")), reverse=True)

    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        """Hold the lock *name* (a key, or ``debs``) while the block runs; another build waits for it."""
        folder = self.root / "locks"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"{name}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def scratch(self) -> tempfile.TemporaryDirectory[str]:
        """A scratch folder in the cache (on the same file system as the blobs), removed when the block ends."""
        folder = self.root / "tmp"
        folder.mkdir(parents=True, exist_ok=True)
        return tempfile.TemporaryDirectory(prefix="build-", dir=folder)

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        try:
            return dict(json.loads(path.read_text()))
        except (OSError, ValueError):
            return None

    @staticmethod
    def _write(path: Path, record: Mapping[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        os.replace(temporary, path)
