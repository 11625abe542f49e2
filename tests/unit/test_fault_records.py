"""The fault record service (chaosdb.core.faultrecords) with each engine's revert handler: a record's parts are
undone by the handler of the engine that made them, a part that cannot be undone keeps the record, and a failed
injection is reverted before its error is raised. Nothing here changes the machine: the handlers' outside calls
are stood in for."""

from __future__ import annotations

import sys

import pytest

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords import lifecycle
from chaosdb.core.faultrecords.handlers import RevertHandler, revert_handlers
from chaosdb.core.faultrecords.records import load_record, load_records, new_record


@pytest.fixture(autouse=True)
def records_here(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAOSDB_FAULTS_DIR", str(tmp_path / "faults"))


def _attack(uid: str, **extra):
    return {"url": "http://127.0.0.1:31767", "uid": uid, "kind": "stress", "action": "cpu", "tls": {}, **extra}


def test_the_handlers_are_the_engines_that_undo_record_parts():
    handlers = revert_handlers()
    assert [h.engine for h in handlers] == ["chaosd", "chaosmesh", "host"]  # plug-in order
    assert all(isinstance(h, RevertHandler) for h in handlers)
    assert revert_handlers() is handlers  # found once per process


def test_each_attack_is_recovered_by_its_engines_handler(monkeypatch):
    from chaosdb.chaosd import revert_handler as chaosd_handler
    from chaosdb.chaosmesh import revert_handler as mesh_handler

    direct, through_mesh = [], []
    monkeypatch.setattr(chaosd_handler, "recover_entry", lambda entry: direct.append(entry["uid"]) or True)
    monkeypatch.setattr(mesh_handler, "_recover_object", lambda entry: through_mesh.append(entry["uid"]) or False)
    rec = new_record("chaosd-stress-cpu", targets=[{"name": "node1"}])
    rec.attacks = [_attack("a1")]
    rec.save()
    done = lifecycle.revert(rec)
    assert direct == ["a1"] and through_mesh == []
    assert done["attacks"] == [{"uid": "a1", "action": "cpu", "recovered_now": True}] and done["stats"] == {}
    assert load_record(rec.id) is None

    rec = new_record("chaosd-stress-cpu", targets=[{"name": "node1"}])
    rec.attacks = [_attack("m1", object={"kind": "PhysicalMachineChaos", "name": "x", "namespace": "default"})]
    rec.save()
    done = lifecycle.revert(rec)
    assert through_mesh == ["m1"] and direct == ["a1"]
    assert done["attacks"] == [{"uid": "m1", "action": "cpu", "recovered_now": False}]


def test_an_attack_that_cannot_be_undone_keeps_its_record(monkeypatch):
    from chaosdb.chaosd import revert_handler as chaosd_handler

    def refuse(entry):
        raise ChaosDBError("no chaosd answers")

    monkeypatch.setattr(chaosd_handler, "recover_entry", refuse)
    rec = new_record("chaosd-stress-cpu", targets=[{"name": "node1"}])
    rec.attacks = [_attack("a1")]
    rec.save()
    with pytest.raises(ChaosDBError, match=r"could not be fully reverted: no chaosd answers; restart the process "
                                           r"to end a cpu attack\. Run 'chaosdb faults cleanup'"):
        lifecycle.revert(rec)
    kept = load_record(rec.id)
    assert kept is not None and kept.notes == ["revert errors: no chaosd answers; restart the process to end a cpu "
                                               "attack"]


def test_a_failed_injection_is_reverted_before_its_error(monkeypatch):
    from chaosdb.chaosd import revert_handler as chaosd_handler

    recovered = []
    monkeypatch.setattr(chaosd_handler, "recover_entry", lambda entry: recovered.append(entry["uid"]) or True)
    rec = new_record("chaosd-stress-cpu")

    def steps(rec):
        rec.attacks.append(_attack("a1"))
        rec.save()
        raise ChaosDBError("the second attack was refused")

    with pytest.raises(ChaosDBError, match="the second attack was refused"):
        lifecycle.inject(rec, steps, 0)
    assert recovered == ["a1"] and load_records() == []


def test_duration_is_checked_once_for_every_engine():
    assert lifecycle.checked_duration(None) == 0.0 and lifecycle.checked_duration("2.5") == 2.5
    with pytest.raises(ChaosDBError, match="duration_s must be >= 0"):
        lifecycle.checked_duration(-1)
    with pytest.raises(ChaosDBError, match="duration_s must be a number of seconds"):
        lifecycle.checked_duration("soon")


def _plug_in(site, name: str, init: str, handler: str) -> None:
    """A distribution on *site* whose one entry point names the package *name* (its ``__init__`` and
    ``revert_handler`` module as given)."""
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text(init)
    (site / name / "revert_handler.py").write_text(handler)
    info = site / f"{name}_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}_plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[chaosdb.plugins]\n{name} = {name}\n")


HANDLER = '''from chaosdb.core.faultrecords.handlers import RevertHandler


class Handler(RevertHandler):
    engine = "{engine}"

    def revert(self, rec, out):
        out.setdefault("undone_by", []).append(self.engine)
        return []


REVERT_HANDLER = Handler()
'''


@pytest.fixture
def site(tmp_path):
    from chaosdb.core import plugins
    from chaosdb.core.faultrecords.handlers import forget_revert_handlers

    site = tmp_path / "site"
    site.mkdir()
    sys.path.insert(0, str(site))
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        plugins.refresh()
        forget_revert_handlers()


def test_a_plugged_in_engine_brings_its_handler_and_a_handler_belongs_to_an_engine(site):
    from chaosdb.core import plugins
    from chaosdb.core.faultrecords.handlers import forget_revert_handlers

    _plug_in(site, "fakeengine", '"""An engine."""\nENGINE = "fake"\n', HANDLER.format(engine="fake"))
    plugins.refresh()
    forget_revert_handlers()
    assert [h.engine for h in revert_handlers()][-1] == "fake"
    rec = new_record("anything")
    rec.save()
    assert lifecycle.revert(rec)["undone_by"] == ["fake"]

    _plug_in(site, "notanengine", '"""Not an engine."""\n', HANDLER.format(engine="stray"))
    plugins.refresh()
    forget_revert_handlers()
    with pytest.raises(ChaosDBError, match="notanengine.revert_handler: a revert handler belongs to an engine's "
                                           "package and is named after it"):
        revert_handlers()


def test_a_timed_fault_is_reverted_by_its_detached_reverter():
    """The reverter runs as ``python -m chaosdb.core.faultrecords.reverter`` and leaves the result for the rollback."""
    import time

    rec = lifecycle.inject(new_record("anything", targets=[{"name": "node1"}]), lambda rec: None, 0.3)
    assert rec.reverter["pid"] and rec.deadline == pytest.approx(rec.created + 0.3)
    deadline, taken = time.monotonic() + 20, []
    while not taken and time.monotonic() < deadline:  # the record goes first, then the result is kept
        time.sleep(0.05)
        taken = lifecycle.take_timer_results()
    assert load_record(rec.id) is None
    (done,) = taken
    assert done["id"] == rec.id and done["reverted_by"] == "timer" and done["targets"] == ["node1"]
