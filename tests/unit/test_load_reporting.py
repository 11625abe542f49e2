"""What a Locust user reports per operation: the sample in the samples file, and the operation in Locust's
statistics, directly when only Locust's own runner listens to its request event, through the event otherwise.

Run in a child process: importing Locust patches the standard library with gevent, which the test workers must not
have."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCENARIO = textwrap.dedent('''
    import locust
    from locust import User
    from locust.env import Environment

    from chaosdb.load.locust_common import ProcessState, report
    from chaosdb.workloads.samples import Sample


    class Writer:
        def __init__(self):
            self.samples = []

        def add(self, sample):
            self.samples.append(sample)


    env = Environment(user_classes=[User])
    env.create_local_runner()
    state = ProcessState()
    state.writer = Writer()
    ok = Sample(1.0, 2.5, "read", "committed", "", 0, 1, "")
    failed = Sample(1.0, 9.0, "update", "ambiguous", "08006", 0, 1, "user1")
    report(env, state, ok, "YCSB")
    report(env, state, failed, "YCSB")
    assert state.writer.samples == [ok, failed]
    stats = env.runner.stats
    assert stats.get("read", "YCSB").num_requests == 1 and stats.get("read", "YCSB").num_failures == 0
    assert stats.get("update", "YCSB").num_failures == 1 and stats.total.num_requests == 2

    # a listener of its own (a plugin, OpenTelemetry): every operation reaches it, with its outcome
    seen = []
    env.events.request.add_listener(lambda **kw: seen.append((kw["name"], kw["context"]["outcome"],
                                                               kw["exception"] is None)))
    report(env, state, ok, "YCSB")
    report(env, state, failed, "YCSB")
    assert seen == [("read", "committed", True), ("update", "ambiguous", False)], seen
    assert stats.total.num_requests == 4 and stats.get("read", "YCSB").num_requests == 2
    print("ok")
''')


def test_every_operation_is_counted_in_locust_with_or_without_other_listeners():
    done = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
