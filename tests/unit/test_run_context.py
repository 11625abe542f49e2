"""One run context (issue 44): the state of one ``chaos run`` in one object the first control creates, its teardown
in one order, run once, and nothing of it left for the next run."""

from __future__ import annotations

import pytest

from chaosdb.core.errors import ChaosDBError
from chaosdb.experiment import refusals
from chaosdb.experiment.context import TEARDOWN_ORDER, active_run, end_run, run_context
from chaosdb.load import state as load_state


@pytest.fixture(autouse=True)
def no_run_left():
    end_run()
    yield
    end_run()


def _experiment(*modules: str) -> dict:
    return {"title": "t", "controls": [{"name": m.split(".")[1], "provider": {"type": "python", "module": m}}
                                       for m in modules]}


def test_the_first_control_creates_it_and_the_others_get_it():
    experiment = _experiment("chaosdb.experiment.control", "chaosdb.load.control", "chaosdb.report.control")
    assert active_run() is None
    first = run_context(experiment)
    assert run_context(experiment) is first and run_context() is first and active_run() is first
    assert first.experiment_id == id(experiment)
    # the controls whose after-experiment hooks end the run, in the order Chaos Toolkit runs them
    assert first.members == ["chaosdb.experiment.control", "chaosdb.load.control", "chaosdb.report.control"]


def test_reading_creates_nothing():
    assert load_state.current() == {} and load_state.process() is None and load_state.workers() == []
    assert refusals.reason() == "" and not refusals.nothing_started()
    assert active_run() is None


def test_the_teardown_runs_in_its_order_once():
    ctx, ran = run_context(), []
    ctx.register_teardown("report", lambda state: ran.append(("report", state)))
    ctx.register_teardown("load", lambda state: ran.append(("load", state)))
    assert ctx.teardown_steps() == ["load", "report"] and list(TEARDOWN_ORDER) == ["load", "report", "cluster"]
    journal: dict = {}
    assert ctx.run_teardown(before="report", state=journal) == ["load"]  # the load is over before the report
    assert ctx.run_teardown(before="cluster", state=journal) == ["report"]
    assert ctx.run_teardown(state=journal) == [] and ran == [("load", journal), ("report", journal)]
    ctx.register_teardown("load", lambda state: ran.append(("again", state)))  # a step that ran is not replaced
    end_run(journal)
    assert [name for name, _ in ran] == ["load", "report"]


def test_a_step_that_fails_has_run_and_says_so():
    ctx, calls = run_context(), []

    def broken(state):
        calls.append(state)
        raise RuntimeError("the load would not stop")

    ctx.register_teardown("load", broken)
    with pytest.raises(RuntimeError, match="would not stop"):
        ctx.run_teardown(through="load")
    assert ctx.run_teardown() == [] and len(calls) == 1


def test_only_named_steps_are_registered_and_the_first_registration_can_be_kept():
    ctx, ran = run_context(), []
    with pytest.raises(ChaosDBError, match="no teardown step 'teardown'.*load, report, cluster"):
        ctx.register_teardown("teardown", lambda state: None)
    ctx.register_teardown("load", lambda state: ran.append("the control's"))
    ctx.register_teardown("load", lambda state: ran.append("the runner's"), replace=False)
    ctx.run_teardown()
    assert ran == ["the control's"]


def test_the_last_control_to_leave_ends_the_run_and_clears_it():
    experiment = _experiment("chaosdb.load.control", "chaosdb.report.control")
    ctx, ran = run_context(experiment), []
    ctx.register_teardown("load", lambda state: ran.append(state))
    refusals.refused("chaosdb load control: no DSN")
    ctx.leave("chaosdb.load.control")
    assert active_run() is ctx and refusals.reason() == "chaosdb load control: no DSN"  # the report still reads it
    ctx.leave("chaosdb.report.control", {"status": "completed"})
    assert active_run() is None and ctx.ended and ran == [{"status": "completed"}]
    assert refusals.reason() == "" and load_state.current() == {}


def test_two_runs_in_one_process_do_not_see_each_others_state():
    first, second = _experiment("chaosdb.load.control"), _experiment("chaosdb.load.control")
    one, stopped = run_context(first), []
    load_state.set_current({"running": True, "samples_dir": "/tmp/run1"}, None)
    one.register_teardown("load", lambda state: stopped.append("run 1's load"))
    refusals.refused("run 1 was refused", nothing_started=True)
    load_state.progress().phase = "method"
    assert one.output_folders == {"samples": "/tmp/run1"}
    two = run_context(second)  # a run left by another experiment ends first: nothing it started is lost
    assert two is not one and one.ended and stopped == ["run 1's load"]
    assert load_state.current() == {} and refusals.reason() == "" and not refusals.nothing_started()
    assert two.checks == {} and two.cluster is None and two.output_folders == {}
    assert load_state.progress().phase == "" and one.load.progress.phase == "method"


def test_a_load_started_outside_a_run_is_adopted_by_the_next_one():
    load_state.set_current({"running": True}, None)
    experiment = _experiment("chaosdb.load.control")
    assert run_context(experiment).load.record == {"running": True}


def test_the_embedded_and_report_controls_ask_the_context_for_the_load_to_be_over(tmp_path):
    from chaosdb.clusters.postgres_ha import control as embedded_control
    from chaosdb.report import control as report_control

    for after in (lambda state: embedded_control.after_experiment_control(
                      {}, state, configuration={"chaosdb_cluster_dir": str(tmp_path / "none")}),
                  lambda state: report_control._write_report(state, str(tmp_path / "report"), "runs")):
        ctx, seen = run_context(), []
        ctx.register_teardown("load", lambda state, seen=seen: (seen.append(dict(state)),
                                                                state.setdefault("chaosdb_load", {"stop_ts": 1.0})))
        journal: dict = {"status": "completed"}
        after(journal)
        assert seen == [{"status": "completed"}] and journal["chaosdb_load"] == {"stop_ts": 1.0}
        end_run()


def test_the_load_control_registers_its_stop_with_its_timeout(monkeypatch):
    from chaosdb.load import control as load_control

    stopped = []
    monkeypatch.setattr(load_control, "start_load", lambda *a, **k: None)
    monkeypatch.setattr(load_control, "refuse_bad_arguments", lambda *a: None)
    monkeypatch.setattr("chaosdb.load.runner.stop_load", lambda timeout: stopped.append(timeout) or {"running": False})
    experiment = _experiment("chaosdb.load.control")
    load_control.before_experiment_control(experiment, stop_timeout_s=7)
    assert run_context(experiment).teardown_steps() == ["load"]
    journal: dict = {}
    load_control.after_experiment_control(experiment, journal, stop_timeout_s=7)
    assert stopped == [7.0] and journal["chaosdb_load"] == {} and active_run() is None

