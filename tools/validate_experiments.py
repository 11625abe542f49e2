"""Validate every experiment file (subdirectories included) with ``chaos validate`` (the test command and CI).

Usage: ``python -m tools.validate_experiments [DIR ...]``. Exits non-zero
when any file fails, printing which and why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def _secret_env_placeholders(path: Path) -> dict[str, str]:
    """Secrets read from environment variables without a default make ``chaos validate`` fail when the
    variable is unset (a database URL with a password is only set where the experiment really runs): give
    those a placeholder for the validation only."""
    try:
        exp = json.loads(path.read_text())
    except ValueError:
        return {}
    out = {}
    for scope in (exp.get("secrets") or {}).values():
        for value in (scope or {}).values() if isinstance(scope, dict) else ():
            if isinstance(value, dict) and value.get("type") == "env" and "default" not in value \
                    and value.get("key") and value["key"] not in os.environ:
                out[value["key"]] = "set-for-validation-only"
    return out


def main(argv: list[str] | None = None) -> int:
    dirs = [Path(d) for d in (argv if argv is not None else sys.argv[1:])] or [Path("experiments")]
    chaos = shutil.which("chaos") or str(Path(sys.executable).parent / "chaos")
    files = sorted(f for d in dirs for f in d.rglob("*.json"))
    failed = []
    for f in files:
        proc = subprocess.run([chaos, "--no-log-file", "validate", "--no-verify-tls", str(f)],
                              capture_output=True, text=True, env={**os.environ, **_secret_env_placeholders(f)})
        ok = proc.returncode == 0
        print(f"{'valid  ' if ok else 'INVALID'} {f}")
        if not ok:
            failed.append(f)
            print((proc.stdout + proc.stderr).strip())
    print(f"experiments: {len(files) - len(failed)} valid, {len(failed)} invalid")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
