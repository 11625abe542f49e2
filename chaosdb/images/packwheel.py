"""The pack's own wheel, for the ``chaosdb`` image, and the pins its dependencies are installed within.

The wheel is the one the user gives (``chaosdb images build chaosdb --wheel PATH``); without one, it is built from
the source checkout this ``chaosdb`` runs from: a copy of the files a build reads (``pyproject.toml`` and the readme
and license files it names, the ``chaosdb`` package without byte code) in a scratch folder, ``pip wheel --no-deps`` with
``SOURCE_DATE_EPOCH`` set, so no ``build/`` or ``*.egg-info`` is left in the checkout or taken from it, and the
same sources give the same wheel, byte for byte. Built wheels are kept in the image cache's ``wheels/``, named by
the hash of those sources: an unchanged checkout is not built again. A ``chaosdb`` installed from a wheel has no
checkout to build from and is refused without ``--wheel``.

The pins are the shipped ``images/chaosdb/constraints.txt`` (every Python package of the image as
``NAME==VERSION``), which the shipped Dockerfile uses too: they belong to this version of the pack, so a wheel of
another version is refused.
"""

from __future__ import annotations

import contextlib
import email.parser
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import chaosdb
from chaosdb.core.console import PROGRESS
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import process_environment
from chaosdb.images.cache import ImageCache
from chaosdb.images.recipes import DebianRootfs, LocalWheel, Recipe, pack_version
from chaosdb.images.rootfs import SOURCE_DATE_EPOCH
from chaosdb.shipped import shipped_dir

__all__ = ["DISTRIBUTION", "CONSTRAINTS", "source_checkout", "wheel_identity", "wheel_problem", "constraints",
           "source_digest", "build_wheel", "pack_wheel", "with_pack"]

#: the pack's distribution name
DISTRIBUTION = "chaostoolkit-db"
#: the pins of the chaosdb image's Python packages, relative to the shipped folder
CONSTRAINTS = "images/chaosdb/constraints.txt"
#: the top-level files of a checkout a wheel build may read (those that exist are copied), beside the package and
#: the files ``pyproject.toml`` names; the patterns are setuptools' default license files
_BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in")
_LICENSE_PATTERNS = ("LICEN[CS]E*", "COPYING*", "NOTICE*", "AUTHORS*")
#: what is never copied from the package folder
_NOT_COPIED = shutil.ignore_patterns("__pycache__", "*.py[co]", "*.egg-info", ".*")


def source_checkout() -> Path | None:
    """The source checkout the running ``chaosdb`` package comes from (the folder whose ``pyproject.toml`` names
    the pack), or ``None`` when it was installed from a wheel."""
    root = Path(chaosdb.__file__).resolve().parent.parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text()).get("project") or {}
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("name") == DISTRIBUTION else None


def wheel_identity(wheel: Path) -> tuple[str, str]:
    """``(name, version)`` from a wheel's ``METADATA``; an error when the file is not a wheel."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            if len(names) != 1:
                raise ChaosDBError(f"{wheel} is not a wheel: it has {len(names)} .dist-info/METADATA files")
            metadata = email.parser.BytesParser().parsebytes(archive.read(names[0]), headersonly=True)
    except (OSError, zipfile.BadZipFile) as e:
        raise ChaosDBError(f"{wheel} is not a wheel ({e})") from None
    return str(metadata.get("Name", "")), str(metadata.get("Version", ""))


def wheel_problem(wheel: Path | None) -> str | None:
    """Why no wheel of this pack can be had for the ``chaosdb`` image (one clause, for the builder's refusal), or
    ``None`` when *wheel* is one, or when it is not given and the checkout can build one."""
    version = pack_version()
    if wheel is None:
        if source_checkout() is None:
            return (f"chaosdb needs the pack's wheel and this chaosdb ({Path(chaosdb.__file__).parent}) was "
                    f"installed from one, not run from a source checkout that could build it: give --wheel PATH "
                    f"(chaostoolkit_db-{version}-py3-none-any.whl, the wheel it was installed from)")
        return None
    if not Path(wheel).is_file():
        return f"--wheel {wheel} is not a file"
    try:
        name, found = wheel_identity(Path(wheel))
    except ChaosDBError as e:
        return f"--wheel {e}"
    if name.lower().replace("_", "-") != DISTRIBUTION:
        return f"--wheel {wheel} is a wheel of {name or 'no name'}, not of {DISTRIBUTION}"
    if found != version:
        return (f"--wheel {wheel} is {DISTRIBUTION} {found} but this builder is {version}, whose pins are for "
                f"{version}: give the wheel of {version}, or build with the pack of {found}")
    return None


def constraints() -> tuple[str, ...]:
    """The pins of the ``chaosdb`` image's Python packages (``NAME==VERSION`` each), from the shipped file."""
    path = shipped_dir() / CONSTRAINTS
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return tuple(line for line in lines if line)


def _named_files(checkout: Path) -> list[str]:
    """The files ``pyproject.toml`` of *checkout* names: its readme, its license file."""
    project = tomllib.loads((checkout / "pyproject.toml").read_text()).get("project") or {}
    readme, license_ = project.get("readme"), project.get("license")  # readme: a file name or a table; license: a table
    named = [readme.get("file") if isinstance(readme, dict) else readme,
             license_.get("file") if isinstance(license_, dict) else None]
    return [name for name in named if isinstance(name, str)]


def _source_files(checkout: Path) -> list[Path]:
    """The files of *checkout* a wheel build reads, relative to it, sorted."""
    top = {*_BUILD_FILES, *_named_files(checkout)} | {p.name for pattern in _LICENSE_PATTERNS
                                                       for p in checkout.glob(pattern)}
    files = [Path(name) for name in top if (checkout / name).is_file()]
    package = checkout / "chaosdb"
    for folder, dirs, names in os.walk(package):
        ignored = _NOT_COPIED(folder, dirs + names)
        dirs[:] = sorted(d for d in dirs if d not in ignored)
        files += [Path(folder, n).relative_to(checkout) for n in names
                  if n not in ignored and Path(folder, n).is_file()]
    return sorted(files)


def source_digest(checkout: Path) -> str:
    """The hex sha256 of the files a wheel build of *checkout* reads: their paths, modes and contents."""
    digest = hashlib.sha256()
    for relative in _source_files(checkout):
        path = checkout / relative
        digest.update(f"{relative.as_posix()}\0{path.stat().st_mode & 0o777:o}\0{path.stat().st_size}\0".encode())
        with open(path, "rb") as data:
            for chunk in iter(lambda: data.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def build_wheel(checkout: Path, out_dir: Path, timeout: float = 600.0) -> Path:
    """Build the pack's wheel from a copy of *checkout* (made in *out_dir*, removed after) into *out_dir*."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="src-", dir=out_dir) as folder:
        source = Path(folder) / "src"
        for relative in _source_files(checkout):
            (source / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(checkout / relative, source / relative)
        argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check",
                "--wheel-dir", str(out_dir), str(source)]
        env = process_environment(SOURCE_DATE_EPOCH=str(SOURCE_DATE_EPOCH))
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ChaosDBError(f"building the pack's wheel from {checkout} took more than {timeout:.0f} s") from None
    if done.returncode != 0:
        tail = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()][-4:]
        raise ChaosDBError(f"building the pack's wheel from {checkout} failed (pip wheel, exit {done.returncode}): "
                           f"{' / '.join(tail)}")
    built = sorted(out_dir.glob("chaostoolkit_db-*.whl"))
    if len(built) != 1:
        raise ChaosDBError(f"pip wheel left {len(built)} wheels of the pack in {out_dir}, not one")
    return built[0]


def _cached_wheel(checkout: Path, cache: ImageCache) -> Path:
    """The wheel of *checkout*'s current sources: from the cache's ``wheels/<source digest>/``, else built there."""
    folder = cache.root / "wheels" / source_digest(checkout)
    with cache.locked(f"wheel-{folder.name}"):
        found = sorted(folder.glob(f"chaostoolkit_db-{pack_version()}-*.whl"))
        if len(found) == 1:
            PROGRESS.info("the pack's wheel of these sources from the cache: %s", found[0])
            return found[0]
        PROGRESS.info("building the pack's wheel from %s (pip wheel, from a copy of its sources)", checkout)
        with cache.scratch() as scratch:
            wheel = build_wheel(checkout, Path(scratch))
            folder.mkdir(parents=True, exist_ok=True)
            kept = folder / wheel.name
            os.replace(wheel, kept)
    return kept


@contextlib.contextmanager
def pack_wheel(recipes: list[Recipe], wheel: Path | None, cache: ImageCache) -> Iterator[Path | None]:
    """The pack's wheel for *recipes* while the block runs: ``None`` when none of them holds it, *wheel* when
    given, else the wheel of the source checkout (from the cache, or built into it); refused in one sentence when
    none can be had."""
    if not any(r.needs_pack_wheel() for r in recipes):
        yield None
        return
    problem = wheel_problem(wheel)
    if problem:
        raise ChaosDBError(f"cannot build {', '.join(r.name for r in recipes if r.needs_pack_wheel())}: {problem}")
    if wheel is not None:
        yield Path(wheel).resolve()
        return
    checkout = source_checkout()
    if checkout is None:  # refused by wheel_problem already
        raise ChaosDBError("no source checkout to build the pack's wheel from: give --wheel PATH")
    yield _cached_wheel(checkout, cache)


def with_pack(spec: DebianRootfs, wheel: Path | None) -> DebianRootfs:
    """*spec* with the pack's *wheel* (and its extras) among its local wheels and the shipped pins as its
    constraints, when it holds the pack; *spec* itself otherwise."""
    if spec.pack_extras is None:
        return spec
    if wheel is None:
        raise ChaosDBError("the chaosdb image needs the pack's wheel: give --wheel PATH, or build from a source "
                           "checkout")
    return replace(spec, wheels=(*spec.wheels, LocalWheel(str(wheel), spec.pack_extras)),
                   pip_constraints=(*spec.pip_constraints, *constraints()))
