"""Boolean health probes say why they are False, and may give a cluster time to come back
(chaosdb.core.health)."""

from __future__ import annotations

import logging

from chaosdb.core.health import healthy_or_say_why, healthy_within


def _readings(*healths):
    seq = list(healths)
    calls = []

    def read():
        calls.append(1)
        return seq.pop(0) if len(seq) > 1 else seq[0]

    return read, calls


BAD = {"healthy": False, "problems": ["store 5 (127.0.0.1:20160) is Disconnected", "1 region(s) with miss peer"]}
GOOD = {"healthy": True, "problems": []}


def test_a_false_names_every_problem_in_the_log(caplog):
    with caplog.at_level(logging.INFO, logger="chaostoolkit"):
        assert healthy_or_say_why(BAD, "the TiKV cluster") is False
        assert healthy_or_say_why(GOOD, "the TiKV cluster") is True
    assert [r.getMessage() for r in caplog.records] == [
        "chaosdb: the TiKV cluster is not healthy: store 5 (127.0.0.1:20160) is Disconnected; "
        "1 region(s) with miss peer"]


def test_without_time_one_reading_decides():
    read, calls = _readings(BAD, GOOD)
    assert healthy_within(read, "x", 0) is False and len(calls) == 1


def test_a_cluster_that_comes_back_in_time_is_healthy_and_the_log_says_what_was_wrong(caplog):
    read, calls = _readings(BAD, BAD, GOOD)
    with caplog.at_level(logging.INFO, logger="chaostoolkit"):
        assert healthy_within(read, "the TiKV cluster", within_s=5, every_s=0.01) is True
    assert len(calls) == 3
    assert "the TiKV cluster is healthy after" in caplog.text and "is Disconnected" in caplog.text
    assert "not healthy" not in caplog.text


def test_a_cluster_that_stays_unhealthy_is_false_after_the_time_and_logs_the_last_problems(caplog):
    last = {"healthy": False, "problems": ["PD member pd1 is not healthy"]}
    read, calls = _readings(BAD, last)
    with caplog.at_level(logging.WARNING, logger="chaostoolkit"):
        assert healthy_within(read, "the TiKV cluster", within_s=0.2, every_s=0.05) is False
    assert 1 <= len(calls) <= 5  # a busy machine may leave time for one reading only; never more than fit
    assert caplog.records[-1].getMessage() == \
        "chaosdb: the TiKV cluster (for 0.2 s) is not healthy: PD member pd1 is not healthy"
