"""Every action of the pack returns the one result shape (``chaosdb.core.results``); the shape itself."""

from __future__ import annotations

import importlib
import inspect
import logging
import time

import pytest

import chaosdb
from chaosdb.core.results import (
    RECORD_KEYS,
    action_result,
    as_record,
    is_action_result,
    record_problems,
    target,
)
from chaosdb.core.timeutil import Stopwatch


def _actions():
    """(module, name, function) of every action ``chaos discover`` lists."""
    seen = []
    for a in chaosdb.discover()["activities"]:
        if a["type"] == "action":
            module = importlib.import_module(a["mod"])
            seen.append((a["mod"], a["name"], getattr(module, a["name"])))
    return seen


def test_every_action_of_the_pack_returns_the_one_shape():
    actions = _actions()
    assert len(actions) >= 59
    assert [f"{m}.{n}" for m, n, f in actions if not is_action_result(f)] == []


def test_the_decorator_keeps_what_chaos_discover_and_validate_see():
    """The signature (with its value checks) and the docstring are the function's own."""
    from chaosdb.core.arguments import CheckedSignature
    from chaosdb.faults import actions

    sig = inspect.signature(actions.limit_cpu)
    assert isinstance(sig, CheckedSignature) and "quota_s" in sig.parameters
    assert sig.problems({"quota_s": -1}) and inspect.getdoc(actions.limit_cpu).startswith("CPU contention")
    listed = {a["name"]: a for a in chaosdb.discover()["activities"]}
    assert [x["name"] for x in listed["limit_cpu"]["arguments"]][:3] == ["target", "count", "quota_s"]


def test_a_result_gets_its_name_targets_first_and_the_time_it_ran():
    @action_result
    def poke(where: str) -> dict:
        time.sleep(0.01)
        return {"targets": [target(where, roles=["leader"], pod=None)], "poked": True}

    out = poke("node1")
    assert list(out)[:3] == ["action", "targets", "poked"] and not record_problems(out)
    assert out["action"] == "poke" and out["targets"] == [{"name": "node1", "roles": ["leader"]}]
    assert out["end_ts"] >= out["start_ts"] and out["duration_s"] >= 0.01
    assert out["started_at"].endswith("+00:00")


def test_an_action_that_timed_its_own_injection_keeps_that_time():
    watch = Stopwatch()
    inner = {"targets": [], **watch.stop().as_dict()}
    time.sleep(0.01)
    out = as_record("inject", inner, Stopwatch())
    assert out["start_ts"] == inner["start_ts"] and out["duration_s"] == inner["duration_s"]


def test_an_action_returning_another_actions_record_is_named_by_itself():
    @action_result
    def inner() -> dict:
        return {"targets": [target(7, kind="store")]}

    @action_result
    def outer() -> dict:
        return {**inner(), "extra": 1}

    out = outer()
    assert out["action"] == "outer" and out["targets"] == [{"name": "7", "kind": "store"}]


def test_a_result_without_targets_is_kept_with_an_empty_list_and_a_warning(caplog):
    @action_result
    def forgetful() -> dict:
        return {"done": True}

    with caplog.at_level(logging.WARNING, logger="chaostoolkit"):
        out = forgetful()
    assert out["targets"] == [] and out["done"] and "did not say what it acted on" in caplog.text


@pytest.mark.parametrize("bad, problem", [
    ([], "not list"),
    ({"action": "x"}, "no 'targets'"),
    ({**{k: 0 for k in RECORD_KEYS}, "targets": [{"name": 3}]}, "string 'name'"),
    ({**{k: 0 for k in RECORD_KEYS}, "targets": "node1"}, "must be a list"),
])
def test_what_is_not_the_shape_is_said(bad, problem):
    assert any(problem in p for p in record_problems(bad)), record_problems(bad)


def test_a_sigterm_that_interrupts_an_action_is_sent_again_so_the_run_does_not_sleep_through_its_pause(monkeypatch):
    from chaoslib.exceptions import InterruptExecution

    from chaosdb.core import results as module

    again: list[bool] = []
    monkeypatch.setattr(module, "sigterm_again", lambda: again.append(True))

    @action_result
    def interrupted(message: str) -> dict:
        raise InterruptExecution(message)

    with pytest.raises(InterruptExecution):
        interrupted("refused: the experiment names no cluster")  # a control's refusal, not the signal
    assert again == []
    with pytest.raises(InterruptExecution, match=module.SIGTERM_MESSAGE):
        interrupted(module.SIGTERM_MESSAGE)
    assert again == [True]


def test_sigterm_again_sends_sigterm_to_this_process():
    import signal

    from chaosdb.core.results import sigterm_again
    from tests.polling import poll

    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        sigterm_again(after_s=0.05)
        assert poll(lambda: received, 30, every=0.05) == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)
