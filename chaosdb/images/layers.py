"""One layer of a recipe: what it is made from (the inputs its cache key is computed from) and how it is made."""

from __future__ import annotations

import platform
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from chaosdb.core.console import PROGRESS
from chaosdb.core.errors import ChaosDBError
from chaosdb.images import cprogram, packwheel, rootfs
from chaosdb.images.cache import ImageCache, file_sha256
from chaosdb.images.prereqs import bin_dir_file
from chaosdb.images.recipes import BinDirFiles, DebianRootfs, LayerSpec, StaticProgram
from chaosdb.images.tarlayer import FileEntry, add_files, copy_normalized

__all__ = ["oci_architecture", "layer_inputs", "make_layer"]

_ARCHITECTURES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm",
                  "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}


def oci_architecture() -> str:
    """This machine's architecture as OCI names it (``amd64``, ``arm64``, ...): the images are built for it."""
    machine = platform.machine()
    if machine not in _ARCHITECTURES:
        raise ChaosDBError(f"cannot build images on a {machine} machine: no OCI architecture name known for it")
    return _ARCHITECTURES[machine]


def _bin_dir_entries(spec: BinDirFiles, bin_dir: Path | None) -> list[FileEntry]:
    entries = []
    for wanted in spec.files:
        found = bin_dir_file(bin_dir, wanted)
        if found is None:
            raise ChaosDBError(f"{' or '.join(wanted.names)} is not in --bin-dir {bin_dir}")
        entries.append(FileEntry(wanted.target, found.resolve(), wanted.mode))
    return entries


def _debian_spec(spec: DebianRootfs) -> dict[str, Any]:
    """A Debian layer's specification as JSON-ready data: its local wheels by name, extras and content (their
    paths are no input), the Python fields left out when empty (so the keys of layers without Python packages stay
    what they were)."""
    data = asdict(spec)
    data["wheels"] = [{"name": Path(w.path).name, "extras": list(w.extras), "sha256": file_sha256(Path(w.path))}
                      for w in spec.wheels]
    for name in ("pip_constraints", "wheels"):
        if not data[name]:
            del data[name]
    if data["pack_extras"] is None:
        del data["pack_extras"]
    return data


def layer_inputs(spec: LayerSpec, bin_dir: Path | None = None, wheel: Path | None = None) -> dict[str, Any]:
    """What the layer is made from, as JSON-ready data: two layers with equal inputs are the same layer. *wheel* is
    the pack's wheel, for a Debian layer that holds it."""
    if isinstance(spec, DebianRootfs):
        spec = packwheel.with_pack(spec, wheel)
        return {"kind": "debian-rootfs", "spec": _debian_spec(spec), "mirrors": rootfs.mirror_lines(spec.suite),
                "trimmed": list(rootfs.TRIMMED_PATHS), "hook_dirs": rootfs.hook_dirs(), "epoch": rootfs.SOURCE_DATE_EPOCH,
                "architecture": oci_architecture()}
    if isinstance(spec, BinDirFiles):
        return {"kind": "bin-dir-files",
                "files": [{"target": e.path, "sha256": file_sha256(e.source), "mode": e.mode}
                          for e in _bin_dir_entries(spec, bin_dir)]}
    if not isinstance(spec, StaticProgram):
        raise ChaosDBError(f"unknown kind of layer: {spec!r}")
    source = cprogram.shipped_source(spec.source)
    return {"kind": "static-program", "source": spec.source, "sha256": file_sha256(source), "target": spec.target,
            "compiler": cprogram.compiler_identity(), "flags": list(cprogram.STATIC_FLAGS)}


def make_layer(spec: LayerSpec, cache: ImageCache, scratch: Path, bin_dir: Path | None = None,
               wheel: Path | None = None) -> dict[str, Any]:
    """Make the layer into the cache's blob store; its record: ``layer`` (the blob and its diff id), ``seconds``,
    and for a Debian root file system ``packages`` (``{name: version}`` as installed)."""
    started = time.monotonic()
    record: dict[str, Any] = {}
    if isinstance(spec, DebianRootfs):
        spec = packwheel.with_pack(spec, wheel)
        tar = scratch / "rootfs.tar"
        log = cache.root / "logs" / f"mmdebstrap-{time.strftime('%Y%m%dT%H%M%S')}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        PROGRESS.info("making a Debian %s root file system with %s (mmdebstrap, messages in %s)", spec.suite,
                      ", ".join(spec.packages) or "no extra packages", log)
        with cache.locked("debs"):
            rootfs.build_rootfs_tar(spec, tar, log, cache.debs)
        record["packages"] = rootfs.installed_packages(tar)
        if spec.pip_requirements or spec.wheels:
            record["python_packages"] = rootfs.installed_python_packages(tar)
        PROGRESS.info("packing the root file system (%d Debian packages) into a layer", len(record["packages"]))
        layer = cache.blobs.put_layer(lambda out: copy_normalized(tar, out, rootfs.keep_in_layer))
        tar.unlink()
    elif isinstance(spec, BinDirFiles):
        entries = _bin_dir_entries(spec, bin_dir)
        PROGRESS.info("packing %s from --bin-dir into a layer", ", ".join(Path(e.path).name for e in entries))
        layer = cache.blobs.put_layer(lambda out: add_files(out, entries))
    elif isinstance(spec, StaticProgram):
        with tempfile.TemporaryDirectory(dir=scratch) as folder:
            binary = Path(folder) / Path(spec.target).name
            PROGRESS.info("compiling %s statically with %s", spec.source, cprogram.compiler())
            cprogram.compile_static(cprogram.shipped_source(spec.source), binary)
            layer = cache.blobs.put_layer(lambda out: add_files(out, [FileEntry(spec.target, binary, 0o755)]))
    else:
        raise ChaosDBError(f"unknown kind of layer: {spec!r}")
    record["layer"] = layer.as_json()
    record["seconds"] = round(time.monotonic() - started, 2)
    return record
