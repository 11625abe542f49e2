"""The images a real node's pods run, built here (:mod:`chaosdb.images`, or taken from its cache) and imported into
the node's containerd."""

from __future__ import annotations

from pathlib import Path

from chaosdb.clusters.kubernetes.realnode.containerd import ContainerdPaths
from chaosdb.images.build import BuiltImage, build_images
from chaosdb.images.containerd import import_image

__all__ = ["images_for_nodes", "import_images"]


def images_for_nodes(names: list[str], bin_dir: str | None) -> dict[str, BuiltImage]:
    """The named images (built, or found in the builder's cache), by name; every missing prerequisite refused at
    once before anything is built."""
    return {b.name: b for b in build_images(names, bin_dir=Path(bin_dir) if bin_dir else None)}


def import_images(images: list[BuiltImage], paths: ContainerdPaths) -> None:
    """Import *images* into the node's containerd (namespace ``k8s.io``), those it lacks."""
    for image in images:
        import_image(image.archive, paths.socket)
