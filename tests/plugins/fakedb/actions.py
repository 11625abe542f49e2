"""fakedb's actions."""

from typing import Any

__all__ = ["fakedb_promote"]


def fakedb_promote(shard: int, wait_s: float = 1.0) -> dict[str, Any]:
    """Make *shard*'s minion the boss (a fake: it only says what it would do)."""
    return {"promoted": f"fake-{shard}", "waited_s": wait_s}
