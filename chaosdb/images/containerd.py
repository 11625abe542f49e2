"""Putting built images into a containerd, with its own ``ctr`` client: ``ctr -a SOCKET -n NAMESPACE images
import ARCHIVE``, skipped when an image of that reference with the same manifest is already there. Kubernetes'
CRI looks in the ``k8s.io`` namespace (pods then use ``imagePullPolicy: Never`` or ``IfNotPresent``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaosdb.core.commands import run_argv
from chaosdb.core.errors import ChaosDBError
from chaosdb.images.oci import read_archive_index
from chaosdb.images.prereqs import require_ctr

__all__ = ["CRI_NAMESPACE", "ctr_argv", "parse_images_list", "present_images", "image_present", "import_image"]

#: the namespace of the Kubernetes CRI plugin's images
CRI_NAMESPACE = "k8s.io"


def ctr_argv(containerd_socket: str | Path, namespace: str, *args: str) -> list[str]:
    """A ``ctr`` command against the containerd at *containerd_socket*, in *namespace*."""
    return [require_ctr(), "-a", str(containerd_socket), "-n", namespace, *args]


def parse_images_list(text: str) -> dict[str, str]:
    """``{reference: manifest digest}`` from the table ``ctr images ls`` prints."""
    found = {}
    for line in text.splitlines()[1:]:
        words = line.split()
        digest = next((w for w in words[1:] if w.startswith("sha256:")), None)
        if words and digest:
            found[words[0]] = digest
    return found


def present_images(containerd_socket: str | Path, namespace: str = CRI_NAMESPACE) -> dict[str, str]:
    """``{reference: manifest digest}`` of the images the containerd has in *namespace*."""
    return parse_images_list(run_argv(ctr_argv(containerd_socket, namespace, "images", "ls"), timeout=60))


def image_present(reference: str, containerd_socket: str | Path, namespace: str = CRI_NAMESPACE,
                  digest: str | None = None) -> bool:
    """Whether the containerd has an image called *reference* in *namespace* (with the manifest *digest*, when
    one is given)."""
    have = present_images(containerd_socket, namespace).get(reference)
    return have is not None and (digest is None or have == digest)


def import_image(archive: str | Path, containerd_socket: str | Path, namespace: str = CRI_NAMESPACE,
                 timeout: float = 900.0) -> dict[str, Any]:
    """Import the OCI archive *archive* into the containerd at *containerd_socket* (and unpack it for its default
    snapshotter), unless an image of the same reference and manifest is there already.

    Returns ``{"reference", "digest", "namespace", "imported"}`` (``imported`` false when it was skipped)."""
    require_ctr()
    archive = Path(archive)
    manifests = read_archive_index(archive)
    named = [m for m in manifests if m.get("reference")]
    if len(named) != 1:
        raise ChaosDBError(f"{archive} must name exactly one image in its index.json; it names {len(named)}")
    reference, digest = str(named[0]["reference"]), str(named[0]["digest"])
    if image_present(reference, containerd_socket, namespace, digest):
        return {"reference": reference, "digest": digest, "namespace": namespace, "imported": False}
    run_argv(ctr_argv(containerd_socket, namespace, "images", "import", str(archive)), timeout=timeout)
    if not image_present(reference, containerd_socket, namespace, digest):
        raise ChaosDBError(f"ctr imported {archive} but the containerd at {containerd_socket} does not list "
                           f"{reference} with manifest {digest} in namespace {namespace}")
    return {"reference": reference, "digest": digest, "namespace": namespace, "imported": True}
