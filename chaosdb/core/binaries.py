"""Finding the server binaries a local cluster runs (``pd-server``, ``pd-simulator``, ...).

None of them ship with this package: users bring them. Looked up, in this order: the ``bin_dir`` argument
(``--bin-dir``), the ``CHAOSDB_BIN_DIR`` environment variable, the cache folder (``$XDG_CACHE_HOME/chaosdb/bin``,
by default ``~/.cache/chaosdb/bin``), then ``PATH``. A missing one is an error that names it, where it was
looked for, and how to get it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import env_value, system_value

__all__ = ["HOW_TO_GET", "cache_dir", "find_binary"]

#: how to get each binary (``go install`` needs Go; times measured on 2 cores)
HOW_TO_GET = {
    "pd-server": "build PD from its sources (github.com/tikv/pd, tag v8.5.7): `go build -tags without_dashboard "
                 "./cmd/pd-server` (a few minutes), or take it from a TiUP / PD release",
    "pd-simulator": "build it from the same PD sources: `cd tools && go build ./pd-simulator`",
    "kube-apiserver": "run scripts/build-local-kubernetes.sh of the chaostoolkit-db source repository (not part of "
                      "the installed package; Go needed; builds Kubernetes v1.34.2, kwok and "
                      "the Chaos Mesh controller into ~/.cache/chaosdb/bin, about 35 min on 2 cores), or take "
                      "the binaries of a Kubernetes server release",
    "kube-controller-manager": "see kube-apiserver: scripts/build-local-kubernetes.sh of the source repository "
                               "builds all three",
    "kube-scheduler": "see kube-apiserver: scripts/build-local-kubernetes.sh of the source repository builds all "
                      "three",
    "kwok": "`go install sigs.k8s.io/kwok/cmd/kwok@v0.7.0` (a few minutes) or scripts/build-local-kubernetes.sh of "
            "the source repository",
    "chaos-controller-manager": "build it from the Chaos Mesh sources (`go build ./cmd/chaos-controller-manager`) or "
                                "run scripts/build-local-kubernetes.sh of the source repository; --no-chaos-mesh "
                                "starts the cluster without it",
}


def cache_dir() -> Path:
    """The folder where server binaries are looked for after CHAOSDB_BIN_DIR: ``$XDG_CACHE_HOME/chaosdb/bin``."""
    base = system_value("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chaosdb" / "bin"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary(name: str, bin_dir: str | Path | None = None) -> str:
    """The path of *name*, or a :class:`ChaosDBError` saying where it was looked for and how to get it."""
    places = [Path(p) for p in (bin_dir, env_value("CHAOSDB_BIN_DIR")) if p] + [cache_dir()]
    for place in places:
        if _executable(place / name):
            return str(place / name)
    found = shutil.which(name)
    if found:
        return found
    looked = ", ".join(str(p) for p in places) + ", PATH"
    how = HOW_TO_GET.get(name, "install it")
    raise ChaosDBError(f"no {name} binary (looked in {looked}): {how}; then put it in one of those places "
                       f"(--bin-dir DIR or CHAOSDB_BIN_DIR=DIR) and run this again")
