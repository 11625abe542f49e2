"""Validate every experiment file with ``chaos validate`` (used by the test command and CI).

Usage: ``python -m chaosdb.devtools.validate_experiments [DIR ...]``. Exits non-zero
when any file fails, printing which and why.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    dirs = [Path(d) for d in (argv if argv is not None else sys.argv[1:])] or [Path("experiments")]
    chaos = shutil.which("chaos") or str(Path(sys.executable).parent / "chaos")
    files = sorted(f for d in dirs for f in d.glob("*.json"))
    failed = []
    for f in files:
        proc = subprocess.run([chaos, "--no-log-file", "validate", "--no-verify-tls", str(f)],
                              capture_output=True, text=True)
        ok = proc.returncode == 0
        print(f"{'valid  ' if ok else 'INVALID'} {f}")
        if not ok:
            failed.append(f)
            print((proc.stdout + proc.stderr).strip())
    print(f"experiments: {len(files) - len(failed)} valid, {len(failed)} invalid")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
