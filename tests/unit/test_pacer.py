from chaosdb.load.locust_common import Pacer


class FakeTime:
    def __init__(self):
        self.now = 100.0
        self.slept = []

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.slept.append(s)
        self.now += s


def test_pacer_offers_users_over_rate_interval_and_catches_up_briefly():
    p = Pacer(max_backlog_s=1.0)
    p._time = clock = FakeTime()
    starts = []
    for _i in range(10):
        p.wait(rate=10, users=2)  # each user: one start every 0.2 s
        starts.append(clock.now)
        clock.now += 0.05  # a fast transaction
    gaps = [round(b - a, 3) for a, b in zip(starts, starts[1:], strict=False)]
    assert gaps == [0.2] * 9
    # a 0.5 s stall: the next starts come without sleeping until the backlog is gone
    clock.now += 0.5
    before = len(clock.slept)
    p.wait(rate=10, users=2)
    assert len(clock.slept) == before, "behind schedule: no sleep"
    # a 10 s stall is not caught up beyond 1 s of backlog
    clock.now += 10
    for _ in range(5):
        p.wait(rate=10, users=2)
    assert p.next_due >= clock.now - 1.0


def test_pacer_does_nothing_without_a_rate():
    p = Pacer()
    p._time = clock = FakeTime()
    p.wait(rate=0, users=5)
    assert clock.slept == []
