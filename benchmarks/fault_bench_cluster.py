"""What the fault benchmarks share: an embedded cluster of their own, every fault and the cluster removed afterwards
whatever happened, and the results printed and written."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaosdb.clusters.postgres_ha import cluster  # noqa: E402
from chaosdb.embedded.state import ClusterLayout, load_layout  # noqa: E402
from chaosdb.faults import actions  # noqa: E402


@contextmanager
def benchmark_cluster(prefix: str, name: str, address_base: str) -> Iterator[tuple[ClusterLayout, Path]]:
    """A 3-node embedded cluster in a temporary folder (readable by its node users); on the way out every fault is
    cleaned up, the cluster is taken down and its folder deleted."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(root, 0o755)
    layout = None
    try:
        cluster.up(root / "c", name, nodes=3, address_base=address_base, timeout=180)
        layout = load_layout(root / "c")
        yield layout, root
    finally:
        actions.cleanup_faults()
        if layout is not None:
            cluster.down(layout, purge=True)
        shutil.rmtree(root, ignore_errors=True)


def write_result(result: dict[str, Any], out: str) -> None:
    """Print *result* as JSON and write it to *out*."""
    text = json.dumps(result, indent=2)
    print(text)
    Path(out).write_text(text + "\n")
