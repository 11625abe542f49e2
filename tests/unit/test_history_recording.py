"""Histories written while a load runs and read back, the one entry to the checkers, lost appends named, and the
``chaosdb history`` command."""

from __future__ import annotations

import json
import random

import pytest

from chaosdb.cli import main
from chaosdb.core.errors import ChaosDBError
from chaosdb.history.check import anomaly_counts, check_history, detect_model
from chaosdb.history.lost_appends import lost_appends
from chaosdb.history.recording import PROCESS_STRIDE, HistoryWriter, read_history, write_history
from chaosdb.workloads.histories import RUN_STRIDE, KeyWindows, outcome_type
from tests.unit.history_ops import invoked, numbered, txn


def test_a_writer_records_invocations_and_completions_that_read_back_merged_in_time_order(tmp_path):
    first, second = HistoryWriter(tmp_path / "history-w0-1.jsonl"), HistoryWriter(tmp_path / "history-w1-2.jsonl")
    first.invoke(0, "txn", [["append", 1, 10], ["r", 2, None]])
    second.invoke(1, "txn", [["r", 1, None]])
    first.complete("ok", 0, "txn", [["append", 1, 10], ["r", 2, []]], "127.0.0.21:5432")
    second.complete("info", 1, "txn", [["r", 1, None]])
    second.invoke(1 + PROCESS_STRIDE, "txn", [["r", 1, None]])
    first.close()
    second.close()
    ops = read_history(tmp_path)
    assert [(o["index"], o["type"], o["process"]) for o in ops] == [
        (0, "invoke", 0), (1, "invoke", 1), (2, "ok", 0), (3, "info", 1), (4, "invoke", 1 + PROCESS_STRIDE)]
    assert ops[2]["value"] == [["append", 1, 10], ["r", 2, []]] and ops[2]["node"] == "127.0.0.21:5432"
    assert "node" not in ops[3] and all(isinstance(o["time"], int) for o in ops)


def test_reading_skips_a_line_still_being_written_and_names_a_bad_one(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('{"type":"ok","process":0,"f":"txn","value":[]}\n{"type":"ok","pro')
    assert len(read_history(path)) == 1
    path.write_text('{"type":"ok","process":0,"f":"txn","value":[]}\nnot json\n')
    with pytest.raises(ChaosDBError, match=r"h.jsonl, line 2: not a JSON object"):
        read_history(path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ChaosDBError, match="no history at .*: no history-\\*.jsonl in the folder"):
        read_history(tmp_path / "empty")
    with pytest.raises(ChaosDBError, match="no such file"):
        read_history(tmp_path / "missing.json")


def test_both_forms_written_and_read_alike(tmp_path):
    ops = numbered([*invoked(txn(("append", 1, 1))), *invoked(txn(("r", 1, [1]), process=1))])
    array, lines = write_history(ops, tmp_path / "h.json"), write_history(ops, tmp_path / "h.jsonl")
    assert array.read_text().lstrip().startswith("[") and len(lines.read_text().splitlines()) == 4
    assert read_history(array) == read_history(lines) == ops


def test_the_model_is_found_from_the_operations():
    assert detect_model([txn(("r", 1, None)), txn(("append", 1, 2))]) == "list-append"
    assert detect_model([txn(("w", 1, 2))]) == "rw-register"
    assert detect_model([{"type": "ok", "process": 0, "value": [["append", 1, 2]]}]) == "list-append"  # no f
    assert detect_model([{"type": "invoke", "process": 0, "f": "cas", "value": [1, 2]}]) == "cas-register"
    with pytest.raises(ChaosDBError, match="cannot tell the history's model"):
        detect_model([txn(("r", 1, None))])
    with pytest.raises(ChaosDBError, match="unknown model 'list-apend' \\(did you mean 'list-append'\\?\\)"):
        check_history([txn(("append", 1, 2))], "list-apend")
    with pytest.raises(ChaosDBError, match="did you mean 'serializable'"):
        check_history([txn(("append", 1, 2))], consistency_model="serialisable")


def _lost_append_history() -> list[dict]:
    """T1 appends 5 to key 1 (acknowledged, served by the old primary); T2, invoked after, reads key 1 without it
    (served by the new one)."""
    t1 = dict(txn(("append", 1, 5), process=0), node="10.0.0.1:5432")
    t2 = dict(txn(("r", 1, []), process=1), node="10.0.0.2:5432")
    return numbered([*invoked(t1), *invoked(t2)])


def test_an_acknowledged_append_a_later_read_misses_is_named_under_real_time_order_only():
    history = _lost_append_history()
    count, examples = lost_appends(history)
    assert count == 1 and "appended 5 to key 1 and was acknowledged at index 1 (served by 10.0.0.1:5432)" \
        in examples[0]["explanation"] and "(served by 10.0.0.2:5432)" in examples[0]["explanation"]
    strict = check_history(history, consistency_model="strict-serializable")
    assert strict["valid"] is False and "lost-append" in strict["anomaly_types"] and strict["lost_appends"] == 1
    assert strict["anomalies"]["lost-append"][0]["served_by"] == {"1": "10.0.0.1:5432", "3": "10.0.0.2:5432"}
    assert anomaly_counts(strict)["lost-append"] == 1
    serializable = check_history(history, consistency_model="serializable")
    assert serializable["valid"] is True and "lost_appends" not in serializable


def test_the_command_checks_a_history_and_says_it_with_its_exit_status(tmp_path, capsys):
    path = write_history(_lost_append_history(), tmp_path / "h.json")
    assert main(["history", "check", str(path)]) == 0
    assert "checked against serializable: valid" in capsys.readouterr().out
    assert main(["history", "check", str(path), "--consistency-model", "strict-serializable", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["valid"] is False and {"valid", "anomaly_types", "anomalies"} <= set(result)
    assert main(["history", "check", str(tmp_path / "nothing.json")]) == 2
    assert "no history at" in capsys.readouterr().err
    (tmp_path / "run").mkdir()
    write_history(_lost_append_history(), tmp_path / "run" / "history-w0-1.jsonl")
    assert main(["history", "merge", str(tmp_path / "run"), str(tmp_path / "merged.json")]) == 0
    assert len(json.loads((tmp_path / "merged.json").read_text())) == 4


def test_a_register_history_goes_to_the_linearizability_checker():
    history = numbered([{"type": "invoke", "process": 0, "f": "write", "value": [7, 1]},
                        {"type": "ok", "process": 0, "f": "write", "value": [7, 1]},
                        {"type": "invoke", "process": 1, "f": "read", "value": [7, None]},
                        {"type": "ok", "process": 1, "f": "read", "value": [7, 2]}])
    result = check_history(history)
    assert result["valid"] is False and result["anomaly_types"] == ["nonlinearizable"], result


def test_outcomes_become_history_types_and_keys_rotate_by_window():
    assert [outcome_type(o) for o in ("committed", "ambiguous", "aborted", "conn_error", "error")] == \
        ["ok", "info", "fail", "fail", "fail"]
    now = [100.0]
    windows = KeyWindows(4, 2.0, 10.0, random.Random(1), run=100, clock=lambda: now[0])
    base = 100 * RUN_STRIDE
    assert {windows.write_key() for _ in range(50)} == {base, base + 1, base + 2, base + 3}
    assert {windows.read_key() for _ in range(50)} == {base, base + 1, base + 2, base + 3}  # never before the run
    now[0] = 102.5
    assert {windows.write_key() for _ in range(50)} == {base + 4, base + 5, base + 6, base + 7}
    assert min(windows.read_key() for _ in range(400)) < base + 4  # one read in four looks back


def test_a_register_history_with_compare_and_set_is_checked_as_the_register_model_too():
    history = numbered([{"type": "invoke", "process": 0, "f": "cas", "value": [None, 1]},
                        {"type": "ok", "process": 0, "f": "cas", "value": [None, 1]},
                        {"type": "invoke", "process": 1, "f": "read", "value": None},
                        {"type": "ok", "process": 1, "f": "read", "value": 1}])
    assert check_history(history, "register")["valid"] is True
