"""Fixtures of the integration tests that several modules share."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.polling import poll
from tests.realservers import real_binaries


@pytest.fixture(scope="module")
def chaosd_release(tmp_path_factory) -> str:
    """The chaosd binary, laid out like a chaosd release (its helpers in tools/ beside it)."""
    from chaosdb.clusters.postgres_ha.chaosd import HELPERS

    found = Path(real_binaries(tmp_path_factory, ["chaosd", "FileTool", "PortOccupyTool", "memStress"]))
    release = tmp_path_factory.mktemp("chaosd-release")
    shutil.copy2(found / "chaosd", release / "chaosd")
    (release / "tools").mkdir()
    for helper in HELPERS[:3]:
        os.symlink(found / helper, release / "tools" / helper)
    return str(release / "chaosd")


@pytest.fixture(scope="module")
def chaosd(chaosd_release, pg_cluster):
    """A real chaosd beside the session cluster, started as `cluster up --chaosd` does (one per module)."""
    from chaosdb.clusters.postgres_ha.chaosd import chaosd_address, start_chaosd, stop_chaosd

    state = start_chaosd(pg_cluster.dir, chaosd_release, chaosd_address(pg_cluster))
    try:
        yield state["url"]
    finally:
        stop_chaosd(pg_cluster.dir)
        assert not os.path.exists(f"/proc/{state['pid']}"), "chaosd survived down"


@pytest.fixture
def clean(chaosd, healthy):
    """The session cluster, healthy, with no fault or chaosd leftover before and after the test."""
    from chaosdb.chaosd import actions
    from chaosdb.faults import probes

    assert probes.no_fault_residue(), probes.fault_residue()
    yield healthy
    actions.revert_attacks(all_clusters=True)
    # a timer that has just reverted its fault may still be exiting: wait for it, a helper that stays is residue
    poll(lambda: probes.fault_residue()["clean"], 30)
    left = probes.fault_residue()
    assert left["clean"], f"residue after the test: {left}"
