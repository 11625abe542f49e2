"""The images a real node's pods run, built here (:mod:`chaosdb.images`, or taken from its cache) and imported into
the node's containerd. The ``chaosdb`` image (the pack itself) is not among those a node gets by default (its first
build takes about two minutes): :func:`import_pack_image` puts it into a node for a test that runs the pack in a
pod."""

from __future__ import annotations

from pathlib import Path

from chaosdb.clusters.kubernetes.realnode.containerd import ContainerdPaths
from chaosdb.images.build import BuiltImage, build_images
from chaosdb.images.containerd import import_image

__all__ = ["images_for_nodes", "import_images", "import_pack_image"]


def images_for_nodes(names: list[str], bin_dir: str | None) -> dict[str, BuiltImage]:
    """The named images (built, or found in the builder's cache), by name; every missing prerequisite refused at
    once before anything is built."""
    return {b.name: b for b in build_images(names, bin_dir=Path(bin_dir) if bin_dir else None)}


def import_images(images: list[BuiltImage], paths: ContainerdPaths) -> None:
    """Import *images* into the node's containerd (namespace ``k8s.io``), those it lacks."""
    for image in images:
        import_image(image.archive, paths.socket)


def import_pack_image(paths: ContainerdPaths, wheel: Path | None = None) -> BuiltImage:
    """The ``chaosdb`` image, built (or found in the builder's cache) from *wheel* or, without it, from the wheel of
    the source checkout, imported into the node's containerd (namespace ``k8s.io``) unless it has it."""
    [built] = build_images(["chaosdb"], wheel=wheel)
    import_image(built.archive, paths.socket)
    return built
