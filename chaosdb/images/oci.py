"""OCI images written by this package: content-addressed blobs, the image's config and manifest, an OCI image
layout folder and the same layout as one ``.tar`` archive (what ``ctr images import`` reads).

Everything is deterministic: JSON with sorted keys and no spaces, layers gzipped without a timestamp or a file
name, archive members sorted with fixed times and owners, so the same layers and config give the same digests.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from chaosdb.core.errors import ChaosDBError

__all__ = ["MEDIA_TYPE_INDEX", "MEDIA_TYPE_MANIFEST", "MEDIA_TYPE_CONFIG", "MEDIA_TYPE_LAYER_GZIP",
           "ANNOTATION_REF_NAME", "ANNOTATION_IMAGE_NAME", "DEFAULT_PATH", "Descriptor", "Layer", "ImageConfig",
           "Image", "BlobStore", "compose_image", "write_layout", "write_archive", "read_archive_index",
           "split_reference"]

MEDIA_TYPE_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_TYPE_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_TYPE_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_TYPE_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
#: the OCI annotation of an image layout's index entry: the image's tag
ANNOTATION_REF_NAME = "org.opencontainers.image.ref.name"
#: containerd's annotation for the whole reference (``ctr images import`` names the image after it)
ANNOTATION_IMAGE_NAME = "io.containerd.image.name"
#: the PATH of every image unless its recipe says otherwise
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: gzip level of the layers: close to the smallest at a fraction of level 9's time
GZIP_LEVEL = 6
#: the modification time of the archive's own members (2024-01-01T00:00:00Z)
ARCHIVE_MTIME = 1704067200
_CHUNK = 1 << 20


def _canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def split_reference(reference: str) -> tuple[str, str]:
    """``(repository, tag)`` of ``registry/name:tag``; a reference without a tag is refused."""
    repository, sep, tag = reference.rpartition(":")
    if not sep or "/" in tag or not repository or not tag:
        raise ChaosDBError(f"image reference {reference!r} has no tag: write it as REGISTRY/NAME:TAG")
    return repository, tag


@dataclass(frozen=True)
class Descriptor:
    """An OCI content descriptor: what a blob is, its digest (``sha256:...``) and its size in bytes."""

    media_type: str
    digest: str
    size: int

    def as_json(self) -> dict[str, Any]:
        """The descriptor as OCI JSON (``mediaType``, ``digest``, ``size``)."""
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


@dataclass(frozen=True)
class Layer:
    """A gzipped layer blob and the digest of its uncompressed tar (the config's ``diff_ids``)."""

    blob: Descriptor
    diff_id: str

    def as_json(self) -> dict[str, Any]:
        """What a cache record keeps of the layer."""
        return {**self.blob.as_json(), "diffID": self.diff_id}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Layer:
        """The layer :meth:`as_json` described."""
        return cls(Descriptor(str(data["mediaType"]), str(data["digest"]), int(data["size"])), str(data["diffID"]))


@dataclass(frozen=True)
class ImageConfig:
    """What a container of the image runs: the OCI config's ``config`` object."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = (DEFAULT_PATH,)
    working_dir: str = ""
    user: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    stop_signal: str = ""

    def as_json(self) -> dict[str, Any]:
        """The OCI ``config`` object, with only the fields that are set."""
        fields: dict[str, Any] = {"Entrypoint": list(self.entrypoint), "Cmd": list(self.cmd), "Env": list(self.env),
                                  "WorkingDir": self.working_dir, "User": self.user, "Labels": dict(self.labels),
                                  "StopSignal": self.stop_signal}
        return {k: v for k, v in fields.items() if v}


@dataclass(frozen=True)
class Image:
    """A composed image: its manifest (whose digest names the image), config and layers, and its reference."""

    reference: str
    manifest: Descriptor
    config: Descriptor
    layers: tuple[Layer, ...]
    platform: Mapping[str, str]

    def index_json(self) -> bytes:
        """The layout's ``index.json``: one manifest, named by the tag (OCI) and by the whole reference (containerd)."""
        _, tag = split_reference(self.reference)
        entry = {**self.manifest.as_json(), "platform": dict(self.platform),
                 "annotations": {ANNOTATION_REF_NAME: tag, ANNOTATION_IMAGE_NAME: self.reference}}
        return _canonical_json({"schemaVersion": 2, "mediaType": MEDIA_TYPE_INDEX, "manifests": [entry]})

    def blob_digests(self) -> list[str]:
        """Every blob the image needs: config, manifest, layers (each once)."""
        return list(dict.fromkeys([self.config.digest, self.manifest.digest,
                                   *(layer.blob.digest for layer in self.layers)]))

    def size(self) -> int:
        """Bytes of the image's blobs (what the registry would store: compressed layers, config, manifest)."""
        return self.config.size + self.manifest.size + sum(layer.blob.size for layer in self.layers)


class _Writable(Protocol):
    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


class _HashingWriter:
    """A write-only stream that hashes and counts what passes through it to *inner*."""

    def __init__(self, inner: _Writable) -> None:
        self.inner = inner
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.size += len(data)
        return self.inner.write(data)

    def flush(self) -> None:
        self.inner.flush()

    def digest(self) -> str:
        return f"sha256:{self.sha256.hexdigest()}"


class BlobStore:
    """Blobs named by their digest, ``ROOT/sha256/<hex>``: written once, shared by every image that has them."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        """Where the blob *digest* is (whether or not it is there)."""
        algorithm, _, hexdigest = digest.partition(":")
        if algorithm != "sha256" or len(hexdigest) != 64:
            raise ChaosDBError(f"not a sha256 digest: {digest!r}")
        return self.root / algorithm / hexdigest

    def has(self, digest: str) -> bool:
        """Whether the blob *digest* is in the store."""
        return self.path(digest).is_file()

    def _incoming(self) -> tuple[int, Path]:
        (self.root / "sha256").mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".incoming-", dir=self.root / "sha256")
        return fd, Path(name)

    def _commit(self, temporary: Path, digest: str) -> None:
        os.chmod(temporary, 0o644)
        os.replace(temporary, self.path(digest))

    def put_bytes(self, data: bytes, media_type: str) -> Descriptor:
        """Store *data*; its descriptor."""
        digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
        if not self.has(digest):
            fd, temporary = self._incoming()
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            self._commit(temporary, digest)
        return Descriptor(media_type, digest, len(data))

    def put_layer(self, fill: Callable[[tarfile.TarFile], object]) -> Layer:
        """A gzipped layer of the tar members *fill* adds (in the order it adds them): its digest and the digest
        of the uncompressed tar come from one pass over the bytes."""
        fd, temporary = self._incoming()
        try:
            with os.fdopen(fd, "wb") as raw:
                compressed = _HashingWriter(raw)
                with gzip.GzipFile(filename="", mode="wb", fileobj=compressed,
                                   compresslevel=GZIP_LEVEL, mtime=0) as gz:
                    uncompressed = _HashingWriter(gz)
                    with tarfile.open(fileobj=uncompressed, mode="w|",  # type: ignore[call-overload]
                                      format=tarfile.PAX_FORMAT) as out:
                        fill(out)
            self._commit(temporary, compressed.digest())
        finally:
            temporary.unlink(missing_ok=True)
        return Layer(Descriptor(MEDIA_TYPE_LAYER_GZIP, compressed.digest(), compressed.size), uncompressed.digest())


def compose_image(store: BlobStore, reference: str, layers: Iterable[Layer], config: ImageConfig,
                  architecture: str, os_name: str = "linux") -> Image:
    """Write the image config and the manifest of *layers* (bottom first) into *store*; the :class:`Image`."""
    split_reference(reference)
    layers = tuple(layers)
    missing = [layer.blob.digest for layer in layers if not store.has(layer.blob.digest)]
    if missing:
        raise ChaosDBError(f"layer blobs missing from {store.root}: {', '.join(missing)}")
    platform = {"architecture": architecture, "os": os_name}
    config_blob = store.put_bytes(_canonical_json({
        **platform, "config": config.as_json(),
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]}}), MEDIA_TYPE_CONFIG)
    manifest = store.put_bytes(_canonical_json({
        "schemaVersion": 2, "mediaType": MEDIA_TYPE_MANIFEST, "config": config_blob.as_json(),
        "layers": [layer.blob.as_json() for layer in layers]}), MEDIA_TYPE_MANIFEST)
    return Image(reference, manifest, config_blob, layers, platform)


_OCI_LAYOUT = _canonical_json({"imageLayoutVersion": "1.0.0"})


def write_layout(store: BlobStore, image: Image, directory: Path) -> Path:
    """The image as an OCI image layout in *directory* (``oci-layout``, ``index.json``, ``blobs/sha256/...``);
    blobs are hard links into the store where the file system allows, copies elsewhere."""
    directory = Path(directory)
    blobs = directory / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    for digest in image.blob_digests():
        target = blobs / digest.split(":", 1)[1]
        if target.exists():
            continue
        try:
            os.link(store.path(digest), target)
        except OSError:
            shutil.copyfile(store.path(digest), target)
    (directory / "oci-layout").write_bytes(_OCI_LAYOUT)
    (directory / "index.json").write_bytes(image.index_json())
    return directory


def _archive_member(name: str, size: int = 0, directory: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = ARCHIVE_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if directory:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
    else:
        info.size, info.mode = size, 0o644
    return info


def write_archive(store: BlobStore, image: Image, archive: Path) -> Path:
    """The image's OCI image layout as one uncompressed tar *archive* (written beside it, then renamed into
    place): what ``ctr images import`` and ``skopeo copy oci-archive:`` read."""
    archive = Path(archive)
    archive.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{archive.name}.", dir=archive.parent)
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w|", format=tarfile.USTAR_FORMAT) as out:
            out.addfile(_archive_member("blobs", directory=True))
            out.addfile(_archive_member("blobs/sha256", directory=True))
            for digest in sorted(image.blob_digests()):
                path = store.path(digest)
                with open(path, "rb") as blob:
                    out.addfile(_archive_member(f"blobs/sha256/{path.name}", path.stat().st_size), blob)
            for member, data in (("index.json", image.index_json()), ("oci-layout", _OCI_LAYOUT)):
                out.addfile(_archive_member(member, len(data)), _BytesReader(data))
        os.chmod(name, 0o644)
        os.replace(name, archive)
    finally:
        Path(name).unlink(missing_ok=True)
    return archive


class _BytesReader:
    """The minimal file object ``tarfile.addfile`` reads from."""

    def __init__(self, data: bytes) -> None:
        self.data, self.offset = data, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.data) if size < 0 else self.offset + size
        chunk, self.offset = self.data[self.offset:end], min(end, len(self.data))
        return chunk


def read_archive_index(archive: Path) -> list[dict[str, Any]]:
    """The manifests an OCI archive's ``index.json`` lists (each with ``reference``: containerd's name for it, or
    the OCI tag), or an error saying what the file is not."""
    try:
        with tarfile.open(archive, mode="r:") as tar:
            member = tar.extractfile("index.json")
            if member is None:
                raise KeyError("index.json")
            index = json.loads(member.read())
    except (OSError, KeyError, tarfile.TarError, ValueError) as exc:
        raise ChaosDBError(f"{archive} is not an OCI image archive (no readable index.json: {exc})") from None
    return [{**m, "reference": (m.get("annotations") or {}).get(ANNOTATION_IMAGE_NAME)
             or (m.get("annotations") or {}).get(ANNOTATION_REF_NAME, "")} for m in index.get("manifests", [])]
