"""Real server binaries for the tests (PD, pd-simulator, the Kubernetes control plane, ...).

Taken from ``CHAOSDB_BIN_DIR`` when it holds them, else unpacked from ``../shared/testenv/bin/*.xz`` (checked
against its ``SHA256SUMS``) into the test session's temporary folder. When neither has them the tests that need
them are skipped, unless ``CHAOSDB_REQUIRE_REAL_SERVERS`` is set (``.ci/run`` sets it when
``../shared/testenv`` exists): then they fail, so that CI never passes without this tier.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTENV = Path(os.environ.get("CHAOSDB_TESTENV", ROOT.parent / "shared" / "testenv"))


def _sums() -> dict[str, str]:
    path = TESTENV / "bin" / "SHA256SUMS"
    if not path.exists():
        return {}
    return {name: digest for digest, name in (line.split() for line in path.read_text().splitlines() if line.strip())}


def real_binaries(tmp_path_factory: pytest.TempPathFactory, names: list[str]) -> str:
    """A folder holding every binary in *names*, or skip (fail when real servers are required)."""
    own = os.environ.get("CHAOSDB_BIN_DIR")
    if own and all(os.access(Path(own) / n, os.X_OK) for n in names):
        return own
    sums = _sums()
    if all((TESTENV / "bin" / f"{n}.xz").exists() for n in names):
        folder = tmp_path_factory.getbasetemp() / "real-servers-bin"
        folder.mkdir(exist_ok=True)
        for n in names:
            target = folder / n
            if not target.exists():
                with lzma.open(TESTENV / "bin" / f"{n}.xz") as src, open(f"{target}.part", "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                digest = hashlib.sha256(Path(f"{target}.part").read_bytes()).hexdigest()
                if sums.get(n) and sums[n] != digest:
                    raise AssertionError(f"{n} unpacked from {TESTENV} does not match its SHA256SUMS")
                os.chmod(f"{target}.part", 0o755)
                os.replace(f"{target}.part", target)
        return str(folder)
    why = (f"real servers {', '.join(names)} not available: set CHAOSDB_BIN_DIR to a folder holding them, or put "
           f"the shared testenv at {TESTENV}")
    if os.environ.get("CHAOSDB_REQUIRE_REAL_SERVERS"):
        pytest.fail(why)
    pytest.skip(why)
