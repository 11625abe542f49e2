"""The register linearizability checker (chaosdb.history.linearizable): the cases Knossos's and Porcupine's tests
check, in our own histories: stale and invented reads, cas from the wrong value, concurrent writes in either order,
info operations that take effect late or never, failed operations that must not take effect, keyed histories with
one bad key, the budget that ends in "unknown", and malformed histories refused with a sentence."""

from __future__ import annotations

import itertools
import json
import random
from types import SimpleNamespace
from typing import Any

import pytest

from chaosdb.core.errors import ChaosDBError
from chaosdb.history import linearizable
from chaosdb.history.linearizable import check_register


def invoke(process: Any, f: str, value: Any = None) -> dict:
    return {"type": "invoke", "process": process, "f": f, "value": value}


def ok(process: Any, f: str, value: Any = None) -> dict:
    return {"type": "ok", "process": process, "f": f, "value": value}


def fail(process: Any, f: str, value: Any = None) -> dict:
    return {"type": "fail", "process": process, "f": f, "value": value}


def info(process: Any, f: str, value: Any = None) -> dict:
    return {"type": "info", "process": process, "f": f, "value": value}


def done(process: Any, f: str, value: Any = None) -> list[dict]:
    """An operation that completed ok before anything else started (a keyed read is invoked as [key, null])."""
    keyed = isinstance(value, list) and len(value) == 2
    asked = ([value[0], None] if keyed else None) if f == "read" else value
    return [invoke(process, f, asked), ok(process, f, value)]


def example(result: dict) -> dict:
    (found,) = result["anomalies"]["nonlinearizable"]
    return found


# --- linearizable and not: single register -------------------------------------------------------------------


def test_a_sequential_history_that_reads_what_it_wrote_is_linearizable():
    result = check_register(done(0, "write", 1) + done(0, "read", 1))
    assert result["valid"] is True
    assert result["anomaly_types"] == [] and result["anomalies"] == {}
    assert (result["keys"], result["operations"], result["info"], result["fail"]) == (1, 2, 0, 0)


def test_a_write_that_crashed_alone_is_linearizable():
    assert check_register([invoke(0, "write", 1), info(0, "write", 1)], initial=0)["valid"] is True


def test_a_read_of_a_value_other_than_the_initial_one_is_not():
    result = check_register(done(0, "read", 1), initial=0)
    assert result["valid"] is False
    found = example(result)
    assert found["ops"][0]["index"] == 1 and found["final_state"] == 0
    assert found["last_linearizable_prefix"]["length"] == 0
    assert "read by process 0 returned 1 (index 1)" in found["explanation"]
    assert "no operation could be linearized before it" in found["explanation"]


def test_the_initial_value_is_null_unless_told():
    assert check_register(done(0, "read", None))["valid"] is True
    result = check_register(done(0, "read", 0))
    assert result["valid"] is False
    assert "leaves the register at null" in example(result)["explanation"]  # values as the JSON history spells them
    assert check_register(done(0, "read", 0), initial=0)["valid"] is True


def test_a_stale_read_after_an_acknowledged_write_is_not_linearizable_and_keeps_the_history_indices():
    history = [{"process": 0, "type": "invoke", "f": "write", "value": 1, "index": 5},
               {"process": 0, "type": "ok", "f": "write", "value": 1, "index": 7},
               {"process": 1, "type": "invoke", "f": "write", "value": 2, "index": 8},
               {"process": 1, "type": "ok", "f": "write", "value": 2, "index": 9},
               {"process": 0, "type": "invoke", "f": "read", "value": None, "index": 99},
               {"process": 0, "type": "ok", "f": "read", "value": 1, "index": 100}]
    result = check_register(history, initial=0)
    assert result["valid"] is False and result["anomaly_types"] == ["nonlinearizable"]
    found = example(result)
    assert found["key"] is None
    assert found["ops"][0] == {"process": 0, "f": "read", "value": 1, "type": "ok", "invoke_index": 99, "index": 100}
    assert found["final_state"] == 2
    prefix = found["last_linearizable_prefix"]
    assert prefix["length"] == 2 and [op["index"] for op in prefix["ends_with"]] == [7, 9]
    assert "read by process 0 returned 1 (index 100)" in found["explanation"]
    assert "leaves the register at 2" in found["explanation"]


def test_a_read_of_a_value_never_written_is_not_linearizable():
    # the register holds 0; a write of 4 and a read are concurrent; the read returns 3, which nobody wrote
    history = done(0, "write", 0) + [invoke(2, "write", 4), invoke(1, "read"), ok(1, "read", 3), ok(2, "write", 4)]
    found = example(check_register(history))
    assert found["ops"][0]["value"] == 3
    assert "leaves the register at 0 or 4" in found["explanation"] or "at 4 or 0" in found["explanation"]


def test_a_cas_succeeds_only_from_the_current_value():
    assert check_register(done(0, "write", 1) + done(0, "cas", [1, 2]) + done(0, "read", 2))["valid"] is True
    result = check_register(done(0, "write", 1) + done(0, "cas", [2, 3]))
    assert result["valid"] is False
    assert "cas from 2 to 3 by process 0 (index 3)" in example(result)["explanation"]


def test_concurrent_writes_may_take_effect_in_either_order():
    both = [invoke(0, "write", 1), invoke(1, "write", 2), ok(0, "write", 1), ok(1, "write", 2)]
    assert check_register(both + done(2, "read", 1))["valid"] is True
    assert check_register(both + done(2, "read", 2))["valid"] is True
    # but once both are acknowledged, the register cannot go back and forth between them
    assert check_register(both + done(2, "read", 1) + done(2, "read", 2))["valid"] is False


def test_a_read_concurrent_with_a_write_cannot_see_the_old_value_after_another_saw_the_new_one():
    history = done(0, "write", 0) + [invoke(1, "write", 1), invoke(2, "read"), ok(2, "read", 1),
                                     invoke(3, "read"), ok(3, "read", 0), ok(1, "write", 1)]
    result = check_register(history)
    assert result["valid"] is False
    assert example(result)["ops"][0]["process"] == 3


def test_an_info_write_may_take_effect_long_after_it_was_invoked():
    history = done(0, "write", 1) + [invoke(1, "write", 2), info(1, "write", 2)]
    for _ in range(20):
        history += done(0, "read", 1)
    assert check_register(history + done(0, "read", 2))["valid"] is True


def test_an_info_write_may_never_take_effect():
    history = done(0, "write", 1) + [invoke(1, "write", 2), info(1, "write", 2)] + done(0, "read", 1)
    assert check_register(history)["valid"] is True
    assert check_register(history)["info"] == 1


def test_an_info_write_takes_effect_at_most_once():
    history = done(0, "write", 1) + [invoke(1, "write", 2), info(1, "write", 2)]
    history += done(0, "read", 2) + done(0, "write", 3) + done(0, "read", 2)
    assert check_register(history)["valid"] is False


def test_an_invocation_without_completion_counts_as_info():
    history = done(0, "write", 1) + [invoke(1, "write", 2)] + done(0, "read", 1) + done(0, "read", 2)
    result = check_register(history)
    assert result["valid"] is True and result["info"] == 1


def test_an_info_read_tells_nothing():
    history = done(0, "write", 1) + [invoke(1, "read"), info(1, "read", 7)]
    assert check_register(history)["valid"] is True


def test_a_failed_cas_must_not_take_effect():
    history = done(0, "write", 1) + [invoke(0, "cas", [1, 2]), fail(0, "cas", [1, 2])]
    assert check_register(history + done(0, "read", 1))["valid"] is True
    result = check_register(history + done(0, "read", 2))
    assert result["valid"] is False and result["fail"] == 1


def test_a_failed_write_must_not_take_effect():
    history = done(0, "write", 1) + [invoke(0, "write", 2), fail(0, "write", 2)] + done(0, "read", 2)
    assert check_register(history)["valid"] is False


def test_a_history_without_invocations_is_read_in_order():
    assert check_register([ok(0, "write", 1), ok(1, "read", 1)])["valid"] is True
    assert check_register([ok(0, "write", 1), ok(0, "write", 2), ok(1, "read", 1)])["valid"] is False


def test_fault_injection_events_are_skipped():
    history = done(0, "write", 1) + [info("nemesis", "start", None)] + done(0, "read", 1)
    assert check_register(history)["valid"] is True


# --- keyed histories -----------------------------------------------------------------------------------------


def test_a_keyed_history_is_checked_key_by_key_and_names_the_one_bad_key():
    history = [invoke(0, "write", ["a", 1]), invoke(1, "write", [3, 1]), ok(0, "write", ["a", 1]),
               ok(1, "write", [3, 1]),
               invoke(0, "cas", ["a", [1, 2]]), ok(0, "cas", ["a", [1, 2]]),
               invoke(2, "write", [3, 4]), ok(2, "write", [3, 4]),
               invoke(1, "read", ["a", None]), ok(1, "read", ["a", 2]),
               invoke(5, "read", [3, None]), ok(5, "read", [3, 1]),  # stale: 4 was acknowledged before
               invoke(2, "read", ["b", None]), ok(2, "read", ["b", None])]
    for event in history:
        event["index"] = 30 + len([e for e in history if "index" in e])
    result = check_register(history)
    assert result["valid"] is False and result["keys"] == 3 and result["form"] == "keyed"
    found = example(result)
    assert found["key"] == 3
    assert "read of key 3 by process 5 returned 1 (index 41)" in found["explanation"]
    assert "leaves the register at 4" in found["explanation"]
    json.dumps(result)  # JSON-serialisable


def test_a_keyed_history_of_good_keys_is_linearizable():
    history = []
    for key in range(5):
        history += done(key, "write", [key, key * 10]) + done(key + 5, "read", [key, key * 10])
        history += done(key, "cas", [key, [key * 10, 1]]) + done(key, "read", [key, 1])
    result = check_register(history)
    assert result["valid"] is True and result["keys"] == 5 and result["operations"] == 20


def test_keyed_values_may_be_lists():
    history = done(0, "write", ["k", [1, 2]]) + done(1, "read", ["k", [1, 2]])
    history += done(0, "cas", ["k", [[1, 2], [3]]]) + done(1, "read", ["k", [3]])
    result = check_register(history)
    assert result["valid"] is True and result["form"] == "keyed"


# --- the budget ----------------------------------------------------------------------------------------------


def _many_concurrent_writes_then_a_bad_read(writers: int) -> list[dict]:
    history = [invoke(p, "write", p) for p in range(writers)] + [ok(p, "write", p) for p in range(writers)]
    return history + done(writers, "read", 99)


def test_a_search_past_its_budget_is_unknown_not_invalid():
    history = _many_concurrent_writes_then_a_bad_read(10)
    result = check_register(history, max_states=100)
    assert result["valid"] == "unknown"
    assert result["unknown_keys"] == [None] and result["anomaly_types"] == []
    assert result["budget"]["max_states"] == 100 and result["budget"]["states_explored"] > 100
    assert check_register(history)["valid"] is False


def test_a_check_past_its_time_limit_is_unknown():
    result = check_register(done(0, "write", 1) + done(0, "read", 1), time_limit_s=-1)
    assert result["valid"] == "unknown" and result["unknown_keys"] == [None]


def test_a_search_that_outlives_the_time_limit_stops_with_unknown(monkeypatch):
    clock = iter([0.0, 0.0])  # the deadline is set, the key starts; from then on the time is up
    monkeypatch.setattr(linearizable, "time", SimpleNamespace(monotonic=lambda: next(clock, 1e9)))
    result = check_register(_many_concurrent_writes_then_a_bad_read(12), time_limit_s=10)
    assert result["valid"] == "unknown" and result["budget"]["states_explored"] <= 2048  # of 24576


def test_an_invalid_key_wins_over_an_unknown_one():
    history = [invoke(p, "write", ["busy", p]) for p in range(10)] + [ok(p, "write", ["busy", p]) for p in range(10)]
    history += done(20, "read", ["busy", 99]) + done(21, "write", ["small", 1]) + done(21, "read", ["small", 2])
    result = check_register(history, max_states=100)
    assert result["valid"] is False and result["unknown_keys"] == ["busy"]
    assert example(result)["key"] == "small"


# --- models and malformed histories --------------------------------------------------------------------------


def test_the_register_model_knows_reads_and_writes_but_not_cas():
    assert check_register(done(0, "write", 1) + done(0, "read", 1), model="register")["model"] == "register"
    with pytest.raises(ChaosDBError, match=r"index 2 is a cas, which the 'register' model does not know"):
        check_register(done(0, "write", 1) + done(0, "cas", [1, 2]), model="register")
    with pytest.raises(ChaosDBError, match="Unknown model 'queue'"):
        check_register([], model="queue")


@pytest.mark.parametrize("history, message", [
    (done(0, "write", 1) + done(0, "increment", 1), r"index 2 has f 'increment'"),
    (done(0, "write", 1) + [{"type": "done", "process": 0, "f": "read"}], r"index 2 has type 'done'"),
    (done(0, "write", 1) + done(0, "cas", 2), r"cas at index 2 has value 2; a cas's value is \[old, new\]"),
    (done(0, "write", ["k", 1]) + done(0, "cas", ["k", 2]), r"cas at index 2 has value \['k', 2\]; in a keyed"),
    (done(0, "write", 1) + [ok(1, "read", 1)], r"ok at index 2 completes nothing: process 1 has no invocation"),
    (done(0, "write", ["k", 1]) + done(0, "write", 2), r"index 2 \(value 2\) is not in the keyed form"),
    ([invoke(0, "write", 1), invoke(0, "write", 2)], r"Process 0 invoked at index 1 while its invocation at index 0"),
    ([invoke(0, "write", 1), ok(0, "read", 1)], r"ok at index 1 is a read but completes the write invoked at index 0"),
    ([invoke(0, "read", ["a", None]), ok(0, "read", ["b", 1])], r"ok at index 1 is for key 'b'"),
    ([{"type": "ok", "process": 0, "f": "read", "value": 1, "index": 12}, "write"], r"event at position 1"),
    ([ok(0, "write", ["k", 1]), info(1, "write")], r"info at index 1 has value None; in a keyed history every value"),
])
def test_a_malformed_history_is_refused_with_a_sentence_naming_the_event(history, message):
    with pytest.raises(ChaosDBError, match=message):
        check_register(history)


# --- against an exhaustive oracle ----------------------------------------------------------------------------


def _linearizable_by_brute_force(operations: list[tuple[int, int | None, str, Any]], initial: Any) -> bool:
    """Try every subset of the info operations and every order of those taken: (invoked, completed or None, f,
    value) operations, an order kept when no operation comes after one that was invoked after it completed."""
    definite = [op for op in operations if op[1] is not None]
    maybe = [op for op in operations if op[1] is None]
    for size in range(len(maybe) + 1):
        for chosen in itertools.combinations(maybe, size):
            for order in itertools.permutations(definite + list(chosen)):
                if any(later[1] is not None and later[1] < earlier[0]
                       for i, earlier in enumerate(order) for later in order[i + 1:]):
                    continue
                state, legal = initial, True
                for _, _, f, value in order:
                    if f == "write":
                        state = value
                    elif (state if f == "read" else [state, value[1]]) != value:
                        legal = False
                        break
                    elif f == "cas":
                        state = value[1]
                if legal:
                    return True
    return False


def _random_history(rnd: random.Random) -> tuple[list[dict], list[tuple[int, int | None, str, Any]]]:
    """A few processes invoking and completing (ok, info or fail) up to 6 operations on values 0..2."""
    events: list[dict] = []
    open_calls: dict[int, tuple[int, str, Any]] = {}
    operations: list[tuple[int, int | None, str, Any]] = []
    to_start, processes = rnd.randrange(1, 7), rnd.randrange(1, 5)
    while to_start or open_calls:
        process = rnd.randrange(processes)
        if process in open_calls:
            invoked, f, value = open_calls.pop(process)
            kind = rnd.choices(["ok", "info", "fail"], [8, 1, 1])[0]
            value = rnd.randrange(3) if f == "read" else value
            if kind != "fail" and not (kind == "info" and f == "read"):
                operations.append((invoked, len(events) if kind == "ok" else None, f, value))
            events.append({"type": kind, "process": process, "f": f, "value": value})
        elif to_start:
            f = rnd.choice(["read", "write", "cas"])
            value = None if f == "read" else rnd.randrange(3) if f == "write" else [rnd.randrange(3), rnd.randrange(3)]
            open_calls[process] = (len(events), f, value)
            events.append({"type": "invoke", "process": process, "f": f, "value": value})
            to_start -= 1
    return events, operations


def test_the_checker_agrees_with_an_exhaustive_search_on_small_random_histories():
    rnd = random.Random(20261127)
    verdicts = []
    for _ in range(300):
        events, operations = _random_history(rnd)
        initial = rnd.choice([None, 0])
        expected = _linearizable_by_brute_force(operations, initial)
        assert check_register(events, initial=initial)["valid"] is expected, (events, initial)
        verdicts.append(expected)
    assert 30 < sum(verdicts) < 270  # both kinds of history were met
