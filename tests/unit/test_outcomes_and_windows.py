import pytest

from chaosdb.core.stats import mean_std, percentile
from chaosdb.load import window as w
from chaosdb.workloads.outcomes import classify
from chaosdb.workloads.samples import Sample, SampleWriter, read_recent, read_samples


@pytest.mark.parametrize("sqlstate,during_commit,broken,expected", [
    ("40001", False, False, "aborted"),
    ("40P01", False, False, "aborted"),
    ("40003", True, False, "ambiguous"),
    ("40003", False, False, "ambiguous"),
    ("08007", True, True, "ambiguous"),
    (None, True, True, "ambiguous"),  # connection lost while COMMIT was in flight
    ("57P01", True, True, "ambiguous"),  # admin shutdown during COMMIT
    (None, False, True, "conn_error"),  # could not connect / lost before COMMIT
    ("57P01", False, True, "conn_error"),
    ("25006", False, False, "conn_error"),  # read-only: landed on a demoted primary
    ("23505", False, False, "error"),
    ("40001", True, False, "aborted"),  # serialization failure reported by COMMIT is retryable
])
def test_classifier(sqlstate, during_commit, broken, expected):
    assert classify(sqlstate, during_commit, broken) == expected


def samples(*rows):
    return [Sample(ts, lat, name, outcome) for ts, lat, name, outcome in rows]


def test_window_bounds_and_selection():
    win = w.window_bounds(now=100.0, window_s=10.0, lag_s=2.0)
    assert (win.start, win.end) == (88.0, 98.0)
    data = samples((87.9, 1, "a", "committed"), (88.0, 2, "a", "committed"), (97.99, 3, "b", "committed"),
                   (98.0, 4, "a", "committed"))
    assert [s.latency_ms for s in w.select(data, win)] == [2, 3]
    assert [s.latency_ms for s in w.select(data, win, "a")] == [2]
    with pytest.raises(ValueError):
        w.window_bounds(100, 0)


def test_rates_and_percentiles():
    win = w.Window(0.0, 10.0)
    data = samples(*[(i * 0.1, float(i + 1), "new_order" if i % 2 else "payment",
                      "committed" if i < 90 else "conn_error") for i in range(100)])
    assert w.throughput(data, win) == 9.0
    assert w.error_rate(data) == 0.1
    assert w.tpmc(data, win) == 45 * 60 / 10
    assert w.latency_percentile(data, 99) == 90.0  # nearest rank of the 90 successes
    assert w.latency_percentile(data, 99, successful_only=False) == 99.0
    with pytest.raises(ValueError):
        w.latency_percentile(samples((1, 5, "a", "conn_error")), 99)


def test_nearest_rank_percentile_and_mean_std():
    assert percentile([1, 2, 3, 4], 50) == 2
    assert percentile([1, 2, 3, 4], 51) == 3
    assert percentile([7], 99.9) == 7
    assert mean_std([2, 4, 4, 4, 5, 5, 7, 9]) == (5.0, 2.0)


def test_writer_and_readers_round_trip_and_ignore_a_partial_line(tmp_path):
    d = tmp_path / "s"
    writer = SampleWriter(d / "samples-w0-1.csv", flush_every_s=3600, flush_rows=10**9)
    for i in range(5000):
        writer.add(Sample(1000.0 + i * 0.01, 1.5, "payment", "committed", "", 0, 3, ""))
    writer.flush()
    with open(d / "samples-w0-1.csv", "a") as f:
        f.write("1060.5,2.0,payment,comm")  # a row being written
    assert sum(1 for _ in read_samples(d)) == 5000
    recent = read_recent(d, since_ts=1045.0, block=4096)
    assert len(recent) == 500 and min(s.start_ts for s in recent) >= 1045.0
    writer.close()


def test_read_recent_returns_exactly_the_window_across_blocks_and_files(tmp_path):
    for worker in range(2):
        writer = SampleWriter(tmp_path / f"samples-w{worker}-9.csv")
        for i in range(20_000):
            writer.add(Sample(i * 0.05 + worker * 0.01, 1.0, "x", "committed"))
        writer.close()
    recent = read_recent(tmp_path, since_ts=995.0, block=1000)
    assert len(recent) == 2 * 100  # 5 s of 20 rows/s, in two files
    assert all(s.start_ts >= 995.0 for s in recent)


def test_executor_connects_with_tcp_timeouts_unless_the_dsn_sets_them(monkeypatch):
    import psycopg

    from chaosdb.workloads.executor import Executor

    seen = {}

    class Stop(Exception):
        pass

    def fake_connect(dsn, **kwargs):
        seen.update(kwargs, dsn=dsn)
        raise Stop()

    monkeypatch.setattr(psycopg, "connect", fake_connect)
    import pytest as _pytest

    with _pytest.raises(Stop):
        Executor("host=127.0.0.1 dbname=x").connection()
    assert seen["tcp_user_timeout"] == "10000" and seen["keepalives_idle"] == "5"
    seen.clear()
    with _pytest.raises(Stop):
        Executor("host=127.0.0.1 dbname=x tcp_user_timeout=0 keepalives=0").connection()
    assert "tcp_user_timeout" not in seen and "keepalives" not in seen and seen["keepalives_count"] == "3"


def test_terminal_builds_its_executor_with_the_sleep_function():
    from chaosdb.workloads.executor import Executor

    ex = Executor("host=x", "default", 5, 2, "tpcc-1", 7, lambda s: None)  # positional, as the terminal does
    assert callable(ex.sleep) and isinstance(ex.tcp_options, dict)


class _FakeConn:
    """What the executor touches of a psycopg connection; *fail* raises from the statement."""

    def __init__(self, fail=None, breaks=False):
        self.autocommit, self.closed, self.broken = False, False, False
        self.fail, self.breaks = fail, breaks
        self.calls = []

    def execute(self, sql, params=None):
        self.calls.append(sql)
        if self.fail is not None:
            self.broken = self.breaks
            raise self.fail
        return self

    def commit(self):
        self.calls.append("COMMIT")

    def rollback(self):
        self.calls.append("ROLLBACK")

    def close(self):
        self.closed = True


def _executor_on_failing_connections(fail, breaks):
    """An executor (2 retries, no backoff) whose connections are fakes failing as *fail* says ("lost": the
    connection drops; a SQLSTATE: a serialization failure; None: no failure); and the list of connections it made."""
    import psycopg

    from chaosdb.workloads.executor import Executor

    exc = None
    if fail == "lost":
        exc = psycopg.OperationalError("server closed the connection unexpectedly")
    elif fail:
        exc = psycopg.errors.SerializationFailure("could not serialize access")
    conns = []

    def connection(self):
        if self.conn is None or self.conn.closed or self.conn.broken:
            self.conn = _FakeConn(exc, breaks)
            conns.append(self.conn)
        return self.conn

    ex = Executor("host=x", max_retries=2, sleep=lambda s: None)
    ex.connection = connection.__get__(ex)
    return ex, conns


@pytest.mark.parametrize("kind,fail,breaks,expected", [
    ("write", None, False, "committed"),
    ("read", None, False, "committed"),
    ("write", "lost", True, "ambiguous"),  # the statement was its own COMMIT: it may have been applied
    ("read", "lost", True, "conn_error"),
    ("write", "40001", False, "aborted"),  # retried, then reported aborted
])
def test_a_single_statement_runs_in_autocommit_and_a_write_in_flight_is_ambiguous(kind, fail, breaks, expected):
    ex, conns = _executor_on_failing_connections(fail, breaks)
    sample = ex.run(kind, lambda conn: conn.execute("UPDATE t SET v = 1") and "k1", 3,
                    keep_key_for=("committed", "ambiguous"), single_statement=kind, key="k1" if kind == "write" else "")
    assert sample.outcome == expected and all(c.autocommit for c in conns)
    assert not any("COMMIT" == call for c in conns for call in c.calls)  # no BEGIN/COMMIT round trips
    assert sample.retries == (2 if fail == "40001" else 0)
    # the key is known before the statement runs: an ambiguous write keeps it though the body never returned
    assert (sample.key == "k1") == (expected in ("committed", "ambiguous"))
    with pytest.raises(ValueError):
        ex.run(kind, lambda conn: "", single_statement="maybe")


@pytest.mark.parametrize("write,fail,breaks,expected", [
    (True, None, False, "committed"),
    (False, None, False, "committed"),
    (True, "lost", True, "ambiguous"),  # the statement was its own COMMIT: it may have been applied
    (False, "lost", True, "conn_error"),
    (True, "40001", False, "aborted"),  # retried, then reported aborted
])
def test_a_statement_run_alone_has_the_outcomes_of_a_one_statement_body(write, fail, breaks, expected):
    """``run_statement`` (YCSB's path, no body to call back) ends as ``run`` ends a one-statement body."""
    def exec_prepared(conn, statement, params):
        return conn.execute(statement, params)

    ex, conns = _executor_on_failing_connections(fail, breaks)
    ex.exec_prepared = exec_prepared
    for _ in range(2):  # the second runs on the connection the first left open (or on a new one after a break)
        sample = ex.run_statement("update" if write else "read", "UPDATE t SET v = $1", ("1",), 3, write=write,
                                  key="k1" if write else "")
        assert sample.outcome == expected and all(c.autocommit for c in conns)
        assert sample.retries == (2 if fail == "40001" else 0)
        assert (sample.key == "k1") == (write and expected in ("committed", "ambiguous"))
    assert not any("COMMIT" == call for c in conns for call in c.calls)  # no BEGIN/COMMIT round trips
    if fail is None:
        assert len(conns) == 1 and len(conns[0].calls) == 2
