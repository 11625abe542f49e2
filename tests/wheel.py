"""The pack as a user installs it: a wheel built from a copy of this checkout, installed into a fresh virtualenv
in a temporary folder outside the checkout; commands run from a folder outside it too, with no repository file on
``sys.path``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what a build never needs (the copy keeps the checkout free of build/ and *.egg-info)
_NOT_BUILT = shutil.ignore_patterns(".venv", ".git", ".tox", "build", "dist", "*.egg-info", "__pycache__", "runs",
                                    ".pytest_cache", "reports", "tests", "benchmarks")


def build_wheel(folder: Path) -> Path:
    """The wheel of this checkout, built from a copy of it in *folder*."""
    src = folder / "src"
    shutil.copytree(ROOT, src, ignore=_NOT_BUILT, symlinks=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(folder / "dist"), str(src)], check=True, capture_output=True, text=True, timeout=600)
    shutil.rmtree(src)
    (wheel,) = (folder / "dist").glob("chaostoolkit_db-*.whl")
    return wheel


#: the container image's pinned versions (the chaosdb image, its Dockerfiles)
IMAGE_CONSTRAINTS = ROOT / "chaosdb" / "shipped" / "images" / "chaosdb" / "constraints.txt"


def make_venv(folder: Path, wheel: Path, extras: str = "", constraints: Path | None = None) -> Path:
    """A fresh virtualenv in *folder* with *wheel* (and *extras*) installed, within *constraints*; its bin
    folder."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    spec = f"{wheel}[{extras}]" if extras else str(wheel)
    pinned = ["-c", str(constraints)] if constraints else []
    done = subprocess.run([str(folder / "bin" / "pip"), "install", "-q", "--progress-bar", "off", *pinned, spec],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "bin"


def user_env(**extra: str) -> dict[str, str]:
    """This process's environment without anything that would put the checkout on ``sys.path``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    return {**env, **extra}
