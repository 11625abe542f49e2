"""What a build or an import needs from this machine, checked before anything starts: each missing thing is named
with the line that installs it, all in one sentence."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from chaosdb.core.errors import ChaosDBError
from chaosdb.images import cprogram, packwheel
from chaosdb.images.recipes import BinDirFile, DebianRootfs, Recipe, StaticProgram

__all__ = ["bin_dir_file", "missing_for_build", "require_build", "require_ctr"]


def bin_dir_file(bin_dir: Path | None, wanted: BinDirFile) -> Path | None:
    """The file of *bin_dir* that provides *wanted* (the first of its names there), if any."""
    if bin_dir is None:
        return None
    return next((Path(bin_dir) / n for n in wanted.names if (Path(bin_dir) / n).is_file()), None)


def _debian_needs() -> list[str]:
    missing = []
    if not shutil.which("mmdebstrap"):
        missing.append("mmdebstrap is not installed (apt-get install -y mmdebstrap)")
    if os.geteuid() != 0 and not shutil.which("newuidmap"):
        missing.append("building a Debian root file system as a user needs newuidmap and subordinate ids in "
                       "/etc/subuid (apt-get install -y uidmap), or run as root")
    return missing


def _compiler_needs() -> list[str]:
    cc = cprogram.compiler()
    if not shutil.which(cc):
        return [f"the C compiler {cc} is not installed (apt-get install -y gcc libc6-dev)"]
    if not cprogram.static_libc():
        return [f"{cc} finds no static C library libc.a (apt-get install -y libc6-dev)"]
    return []


def _bin_dir_needs(recipe: Recipe, bin_dir: Path | None) -> list[str]:
    wanted = recipe.bin_dir_files()
    if not wanted:
        return []
    names = ", ".join(" or ".join(f.names) for f in wanted)
    if bin_dir is None:
        return [f"{recipe.name} needs --bin-dir, a folder holding {names}"]
    if not Path(bin_dir).is_dir():
        return [f"--bin-dir {bin_dir} is not a folder (it must hold {names})"]
    absent = [" or ".join(f.names) for f in wanted if bin_dir_file(bin_dir, f) is None]
    return [f"--bin-dir {bin_dir} lacks {', '.join(absent)} (needed by {recipe.name})"] if absent else []


def missing_for_build(recipes: Iterable[Recipe], bin_dir: Path | None = None, wheel: Path | None = None) -> list[str]:
    """What this machine lacks to build *recipes* (empty when nothing), each with its install line; *wheel* is the
    pack's wheel for an image that holds it (without it, the source checkout must be there to build one)."""
    recipes = list(recipes)
    found: list[str] = []
    layers = [layer for r in recipes for layer in r.layers]
    if any(isinstance(layer, DebianRootfs) for layer in layers):
        found += _debian_needs()
    if any(isinstance(layer, StaticProgram) for layer in layers):
        found += _compiler_needs()
    for recipe in recipes:
        found += _bin_dir_needs(recipe, bin_dir)
    if any(recipe.needs_pack_wheel() for recipe in recipes):
        problem = packwheel.wheel_problem(wheel)
        found += [problem] if problem else []
    return list(dict.fromkeys(found))


def require_build(recipes: Iterable[Recipe], bin_dir: Path | None = None, wheel: Path | None = None) -> None:
    """Refuse, in one sentence, a build this machine cannot carry out."""
    recipes = list(recipes)
    missing = missing_for_build(recipes, bin_dir, wheel)
    if missing:
        raise ChaosDBError(f"cannot build {', '.join(r.name for r in recipes)}: {'; '.join(missing)}")


def require_ctr() -> str:
    """The path of containerd's ``ctr``, or a refusal naming the install line."""
    found = shutil.which("ctr")
    if not found:
        raise ChaosDBError("cannot import images: containerd's ctr is not installed (apt-get install -y containerd)")
    return found
