"""Run a command beside CPU-bound processes at normal priority: how the test suite fares on a busy machine.

    python tests/busy.py --burners 2 -- pytest -q

Each burner is a Python process spinning on one core; they start before the command and are killed when it
ends (or when this script is interrupted), and the script exits with the command's exit code. It prints how
long the command took and how much CPU the burners got, so a run's figures can be recorded.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

SPIN = "import signal, sys; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nwhile True: pass\n"


class Burners:
    """*count* spinning processes for the life of a ``with`` block (none when *count* is 0)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Burners:
        self.procs = [subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL)
                      for _ in range(self.count)]
        return self

    def __exit__(self, *exc: object) -> None:
        for b in self.procs:
            b.send_signal(signal.SIGTERM)
        for b in self.procs:
            try:
                b.wait(timeout=10)
            except subprocess.TimeoutExpired:
                b.kill()
                b.wait()

    def cpu_s(self) -> float:
        """CPU seconds the burners have used so far."""
        return sum(_cpu_s(b.pid) for b in self.procs)


def _cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burners", type=int, default=2, help="CPU-bound processes beside the command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    t0 = time.monotonic()
    code = 1
    with Burners(args.burners) as burners:
        try:
            code = subprocess.call(command)
        finally:
            cpu = burners.cpu_s()
    took = time.monotonic() - t0
    print(f"busy: {' '.join(command)} took {took:.0f} s (exit {code}) beside {args.burners} CPU-bound "
          f"process(es) that used {cpu:.0f} CPU s ({cpu / took if took else 0:.2f} cores)", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
