"""The master/worker plumbing without Locust processes: what a worker ships, what the master writes and how it
tells a lost worker from one that quit at the end (the real processes: tests/integration/test_load_distributed.py)."""

from __future__ import annotations

from types import SimpleNamespace

from chaosdb.load.distributed import (
    SAMPLES_MESSAGE,
    STOP_REQUEST,
    MasterCollector,
    ShippingWriter,
    lost_workers,
    read_workers,
)
from chaosdb.workloads.samples import Sample, read_samples


class FakeMaster:
    """What MasterCollector uses of Locust's MasterRunner: registered messages, clients, worker indexes."""

    def __init__(self) -> None:
        self.handlers: dict = {}
        self.nodes: dict[str, SimpleNamespace] = {}
        self.worker_indexes: dict[str, int] = {}
        self.clients = SimpleNamespace(all=[])

    def register_message(self, kind, handler, concurrent=False):
        self.handlers[kind] = handler

    def connect(self, wid: str) -> None:
        self.worker_indexes[wid] = len(self.worker_indexes)
        self.nodes[wid] = SimpleNamespace(id=wid, state="running")
        self.clients.all = list(self.nodes.values())

    def drop(self, wid: str) -> None:
        del self.nodes[wid]
        self.clients.all = list(self.nodes.values())


class FakeWorker:
    def __init__(self, master: FakeMaster, wid: str) -> None:
        self.master, self.wid = master, wid

    def send_message(self, kind, data):
        self.master.handlers[kind](environment=None, msg=SimpleNamespace(node_id=self.wid, data=data, type=kind))


def _sample(i: int, terminal: int) -> Sample:
    return Sample(1_800_000_000.0 + i, 5.0, "new_order", "committed", terminal=terminal, key=f"1:1:{i}")


def test_samples_of_every_worker_end_up_in_the_masters_directory_once(tmp_path):
    master = FakeMaster()
    collector = MasterCollector(master, tmp_path)
    assert SAMPLES_MESSAGE in master.handlers
    writers = {}
    for wid in ("host-a_1", "host-b_2"):
        master.connect(wid)
        writers[wid] = ShippingWriter(FakeWorker(master, wid), flush_every_s=3600, flush_rows=3)
    for i in range(7):
        writers["host-a_1"].add(_sample(i, 0))
        writers["host-b_2"].add(_sample(i, 1))
    for w in writers.values():
        w.close()  # the last partial batch
    collector.poll()
    rows = list(read_samples(tmp_path))
    assert len(rows) == 14 and {r.terminal for r in rows} == {0, 1}
    workers = {w["id"]: w for w in read_workers(tmp_path)}
    assert workers["host-a_1"]["samples"] == 7 and workers["host-a_1"]["batches"] == 3
    assert workers["host-b_2"]["file"].startswith("samples-m1-") and lost_workers(list(workers.values())) == []


def test_a_worker_without_heartbeat_is_lost_mid_run_one_that_quit_after_the_stop_is_not(tmp_path):
    master = FakeMaster()
    collector = MasterCollector(master, tmp_path)
    for wid in ("a", "b", "c"):
        master.connect(wid)
    collector.poll()
    master.nodes["b"].state = "missing"  # Locust: no heartbeat for 3 s
    collector.poll()
    lost = lost_workers(read_workers(tmp_path))
    assert [(w["id"], w["gone"], w["mid_run"]) for w in lost] == [("b", "lost", True)]
    master.drop("a")  # quit on its own before the stop: a loss too
    collector.poll()
    (tmp_path / STOP_REQUEST).write_text("1\n")
    master.drop("c")  # quit when the load was stopped: not a loss
    collector.poll()
    every = {w["id"]: w for w in read_workers(tmp_path)}
    assert (every["a"]["gone"], every["a"]["mid_run"]) == ("quit", True)
    assert (every["c"]["gone"], every["c"]["mid_run"]) == ("quit", False)
    assert sorted(w["id"] for w in lost_workers(list(every.values()))) == ["a", "b"]


def test_no_master_no_workers_file(tmp_path):
    assert read_workers(tmp_path) == [] and lost_workers([]) == []
