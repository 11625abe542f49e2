"""Whether this machine's kernel has the netem qdisc (delay, loss, corruption, duplication in ``tc``).

Some kernels ship without it (this one's ``tc`` has ``tbf`` and ``htb`` only). Every engine that would need netem
on this machine — the local engine's delay and loss, chaosd's network attacks through PhysicalMachineChaos — asks
here first and refuses with the reason, instead of failing inside the tool (the Chaos Mesh controller retries a
failed chaosd attack many times).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

__all__ = ["netem_available", "NO_NETEM"]

NO_NETEM = ("this machine's kernel has no netem qdisc (tc qdisc add ... netem fails: the sch_netem module is "
            "missing)")


@functools.lru_cache(maxsize=1)
def netem_available() -> bool:
    """Tried on ``lo`` of a throwaway network namespace, so the host itself is never touched (root only; False
    when it cannot be tried)."""
    tc = shutil.which("tc") or next((p for p in ("/usr/sbin/tc", "/sbin/tc") if os.path.exists(p)), None)
    if os.geteuid() != 0 or not shutil.which("unshare") or not tc:
        return False
    proc = subprocess.run(["unshare", "--net", tc, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                          capture_output=True, text=True)
    return proc.returncode == 0
