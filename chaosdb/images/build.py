"""Building a recipe's image: its key from its inputs, then each layer (from the cache when one with the same
inputs was made before), the config and manifest, the OCI layout and the archive; all of it in the cache, the
archive copied to an output folder when asked. A second build of an unchanged recipe only computes the key."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaosdb.core.console import PROGRESS
from chaosdb.core.timeutil import now_iso
from chaosdb.images.cache import ImageCache, cache_key
from chaosdb.images.layers import layer_inputs, make_layer, oci_architecture
from chaosdb.images.oci import Layer, compose_image, split_reference, write_archive, write_layout
from chaosdb.images.packwheel import pack_wheel
from chaosdb.images.prereqs import require_build
from chaosdb.images.recipes import Recipe, pack_version, recipe

__all__ = ["BUILDER_VERSION", "BuiltImage", "image_inputs", "build_image", "build_images", "archive_name"]

#: the version of this builder's output format: a change that alters what an image holds for the same inputs
#: raises it, so the cache never answers with an image the builder would no longer make
BUILDER_VERSION = 1


@dataclass(frozen=True)
class BuiltImage:
    """An image in the cache: where its archive and layout are, what it is, and how long it took."""

    name: str
    reference: str
    key: str
    archive: Path
    layout: Path
    manifest_digest: str
    archive_bytes: int
    layers: list[dict[str, Any]]
    packages: dict[str, str] = field(default_factory=dict)
    python_packages: dict[str, str] = field(default_factory=dict)
    built_at: str = ""
    build_seconds: float = 0.0
    cached: bool = False
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The image as JSON-ready data (paths as text)."""
        return {**asdict(self), "archive": str(self.archive), "layout": str(self.layout)}


def archive_name(reference: str) -> str:
    """The archive's file name: ``<name>-<tag>.tar``."""
    repository, tag = split_reference(reference)
    return f"{repository.rsplit('/', 1)[-1]}-{tag}.tar"


def image_inputs(image: Recipe, bin_dir: Path | None = None, version: str | None = None,
                 wheel: Path | None = None) -> dict[str, Any]:
    """What the image is made from (its key is their hash): the builder, the reference, each layer's inputs and
    the config. *wheel* is the pack's wheel, for an image that holds it."""
    return {"builder": BUILDER_VERSION, "reference": image.reference(version), "architecture": oci_architecture(),
            "layers": [layer_inputs(layer, bin_dir, wheel) for layer in image.layers],
            "config": image.config.as_json()}


def _layer(spec_inputs: dict[str, Any], spec: Any, cache: ImageCache, scratch: Path, bin_dir: Path | None,
           wheel: Path | None, refresh: bool) -> tuple[Layer, dict[str, Any]]:
    key = cache_key({"builder": BUILDER_VERSION, **spec_inputs})
    with cache.locked(key):
        record = None if refresh else cache.layer_record(key)
        if record is None:
            record = {**make_layer(spec, cache, scratch, bin_dir, wheel), "key": key, "inputs": spec_inputs,
                      "built_at": now_iso()}
            cache.save_layer_record(key, record)
        else:
            PROGRESS.info("layer %s (%s) from the cache", record["layer"]["digest"][:19], spec_inputs["kind"])
    return Layer.from_json(record["layer"]), record


def _from_record(record: dict[str, Any], started: float, cached: bool) -> BuiltImage:
    return BuiltImage(name=record["name"], reference=record["reference"], key=record["key"],
                      archive=Path(record["archive"]), layout=Path(record["layout"]),
                      manifest_digest=record["manifest_digest"], archive_bytes=int(record["archive_bytes"]),
                      layers=list(record["layers"]), packages=dict(record.get("packages") or {}),
                      python_packages=dict(record.get("python_packages") or {}),
                      built_at=str(record.get("built_at", "")), build_seconds=float(record.get("build_seconds", 0)),
                      cached=cached, seconds=round(time.monotonic() - started, 2))


def _copy_out(archive: Path, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / archive.name
    if target.exists() and os.path.samefile(target, archive):
        return target
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    try:
        os.link(archive, partial)
    except OSError:
        shutil.copyfile(archive, partial)
    os.replace(partial, target)
    return target


def build_image(name: str, bin_dir: Path | None = None, out_dir: Path | None = None, cache: ImageCache | None = None,
                refresh: bool = False, wheel: Path | None = None) -> BuiltImage:
    """Build the recipe *name* (or take it from the cache), its archive also copied into *out_dir* when given.
    *refresh* makes every layer again (a Debian root file system then gets the mirror's current packages).
    *wheel* is the pack's wheel for the ``chaosdb`` image (default: built from the source checkout)."""
    [built] = build_images([name], bin_dir, out_dir, cache, refresh, wheel)
    return built


def build_images(names: Iterable[str], bin_dir: Path | None = None, out_dir: Path | None = None,
                 cache: ImageCache | None = None, refresh: bool = False, wheel: Path | None = None) -> list[BuiltImage]:
    """Build each recipe of *names* in turn; what this machine lacks for any of them is refused before the first
    starts. *wheel* is the pack's wheel for the ``chaosdb`` image (default: built from the source checkout, once
    for all)."""
    images = [recipe(n) for n in dict.fromkeys(names)]
    require_build(images, bin_dir, wheel)
    cache = cache or ImageCache()
    with pack_wheel(images, wheel, cache) as the_wheel:
        return [_build(image, bin_dir, out_dir, cache, refresh, the_wheel) for image in images]


def _build(image: Recipe, bin_dir: Path | None, out_dir: Path | None, cache: ImageCache,
           refresh: bool, wheel: Path | None = None) -> BuiltImage:
    started = time.monotonic()
    inputs = image_inputs(image, bin_dir, wheel=wheel)
    key = cache_key(inputs)
    with cache.locked(key):
        record = None if refresh else cache.image_record(key)
        cached = record is not None
        if record is None:
            PROGRESS.info("building %s (key %s)", image.reference(), key[:12])
            record = _make(image, inputs, key, cache, bin_dir, wheel, refresh, started)
        else:
            PROGRESS.info("%s is in the cache (key %s)", image.reference(), key[:12])
    built = _from_record(record, started, cached)
    if out_dir is not None:
        _copy_out(built.archive, Path(out_dir))
    return built


def _make(image: Recipe, inputs: dict[str, Any], key: str, cache: ImageCache, bin_dir: Path | None,
          wheel: Path | None, refresh: bool, started: float) -> dict[str, Any]:
    layers: list[Layer] = []
    packages: dict[str, str] = {}
    python_packages: dict[str, str] = {}
    with cache.scratch() as scratch:
        for spec, spec_inputs in zip(image.layers, inputs["layers"], strict=True):
            layer, layer_record = _layer(spec_inputs, spec, cache, Path(scratch), bin_dir, wheel, refresh)
            layers.append(layer)
            packages.update(layer_record.get("packages") or {})
            python_packages.update(layer_record.get("python_packages") or {})
    composed = compose_image(cache.blobs, inputs["reference"], layers, image.config, inputs["architecture"])
    folder = cache.image_dir(key)
    if folder.exists():
        shutil.rmtree(folder)
    layout = write_layout(cache.blobs, composed, folder / "layout")
    archive = write_archive(cache.blobs, composed, folder / archive_name(composed.reference))
    record = {"name": image.name, "reference": composed.reference, "key": key, "archive": str(archive),
              "layout": str(layout), "manifest_digest": composed.manifest.digest,
              "config_digest": composed.config.digest, "archive_bytes": archive.stat().st_size,
              "layers": [layer.as_json() for layer in layers], "packages": packages,
              "python_packages": python_packages, "built_at": now_iso(),
              "build_seconds": round(time.monotonic() - started, 2), "pack_version": pack_version(),
              "inputs": inputs}
    cache.save_image_record(key, record)
    PROGRESS.info("%s: %s, %.1f MB, %s", image.reference(), composed.manifest.digest[:19],
                  archive.stat().st_size / 1e6, archive)
    return record
