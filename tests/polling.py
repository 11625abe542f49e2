"""Waiting for a condition in tests: poll with a generous deadline, never assert on elapsed time."""

from __future__ import annotations

import time


def poll(check, timeout: float = 120.0, every: float = 0.3):
    """The first truthy result of *check* within *timeout*, else the last one."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(every)
