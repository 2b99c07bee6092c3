"""Spot notices from Redis into a real Framework + JobBook on a LocalCluster (plastic.framework.notices).

A task runs on a spot agent; a terminate notice is published into the session's real Redis; the
notices thread hands it to the Framework, whose JobBook kills the task (no runtime history: it
cannot be known to fit the window) and relaunches it elsewhere, all unseen by the leader."""

from __future__ import annotations

import time

import pytest

from plastic.core.book.lifecycle import TaskState
from plastic.core.model import PREEMPTIBLE, Resources
from plastic.framework.adapter import Framework
from plastic.framework.launcher import TaskCommand
from plastic.framework.notices import NoticeFollower
from plastic.local.handle import LocalCluster
from plastic.store import Store
from tests.fakes.records import Kinds
from tests.waiting import eventually

SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 2, "ram_mib": 2048, "preemptible": False},
    {"name": "burst", "count": 2, "cpus": 1, "ram_mib": 1024, "preemptible": True},
]}


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0) as c:
        yield c


@pytest.fixture
def framework(cluster):
    ended: list = []
    rec = Kinds()
    fw = Framework(cluster.master_url, on_ended=ended.append, tick_s=0.5, recorders=[rec])
    fw.start()
    fw.test_ended, fw.test_records = ended, rec  # type: ignore[attr-defined]
    yield fw
    fw.stop(kill_tasks=True)


def running_on(fw: Framework, job_id: str, attempt: int) -> str | None:
    with fw.lock:
        job = fw.book.jobs[job_id]
        ok = job.attempt == attempt and job.state is TaskState.RUNNING
        return job.agent_id if ok else None


def test_terminate_notice_kills_and_relaunches_elsewhere_once(cluster, framework, store: Store):
    fw = framework
    follower = NoticeFollower(store, fw, block_ms=200).start()
    try:
        fw.issue("1", TaskCommand("sleep 60"), Resources(1, 256), PREEMPTIBLE, name="long")
        first = eventually(lambda: running_on(fw, "1", 1), 20, "job 1's first attempt running")
        assert fw.agents()[first].preemptible
        instance = next(a.instance_id for a in cluster.agents if a.id == first)
        target = f"agent:{first}"
        t0 = time.monotonic()
        ids = [store.publish_notice("terminate", target, {"terminate_at": time.time() + 20, "source": "test"})
               for _ in range(50)]
        assert sum(1 for i in ids if i) == 1  # the store keeps one
        # the same interruption named by its instance id, from another source: the same agent, ignored
        assert store.publish_notice("terminate", f"instance:{instance}",
                                    {"terminate_at": time.time() + 20, "source": "sqs"})
        second = eventually(lambda: running_on(fw, "1", 2), 20, "job 1's second attempt running")
        relaunch_s = time.monotonic() - t0
        assert second != first
        for _ in range(50):  # straight into the Framework, as a second follower would
            fw.notice(first, "terminate", time.time() + 20)
        rec = fw.test_records
        assert len(rec.of("notice")) == 1 and len(rec.of("drain_kill")) == 1
        assert len(rec.of("duplicate_notice")) == 50
        (requeue,) = rec.of("requeue")
        assert (requeue["cause"], requeue["counted_as"], requeue["agent_id"]) == ("notice_kill", "preempted", first)
        notice = rec.of("notice")[0]
        assert notice["jobs"] == ["1"] and 15 < notice["window_s"] <= 20.5
        assert fw.test_ended == []  # the leader saw nothing: no failure, one job
        assert list(fw.running()) == ["1"]
        with fw.lock:
            fw.book.validate()
            assert first in fw.book.notices.draining
        print(f"notice -> relaunched and running: {relaunch_s:.2f} s")
        assert relaunch_s < 10
    finally:
        follower.stop()


def test_notices_from_before_start_up_that_still_apply(cluster, framework, store: Store):
    fw = framework
    core = next(a.id for a in cluster.agents if not a.preemptible)
    burst = [a for a in cluster.agents if a.preemptible]
    live = [a for a in burst if a.id in fw.agents()]
    assert len(live) >= 1
    now = time.time()
    stale = store.publish_notice("terminate", f"agent:{core}", {"terminate_at": now - 5})
    ahead = store.publish_notice("terminate", f"instance:{live[0].instance_id}", {"terminate_at": now + 60})
    rebalance = store.publish_notice("rebalance", f"agent:{core}", {"notice_time": now - 30})
    unknown = store.publish_notice("terminate", "agent:nobody-S9", {"terminate_at": now + 60})
    assert stale and ahead and rebalance and unknown
    follower = NoticeFollower(store, fw, block_ms=200).start()
    try:
        assert follower.caught_up.wait(10)
        eventually(lambda: live[0].id in fw.book.notices.draining, 20, "the live spot agent draining")
        with fw.lock:
            assert core not in fw.book.notices.draining  # its deadline had passed before start-up
            assert core in fw.book.notices.rebalancing
        assert list(follower.pending) == [("terminate", "agent:nobody-S9")]
        # published after start-up: followed from the stream's end
        store.publish_notice("rebalance", f"agent:{live[0].id}", {"notice_time": time.time()})
        eventually(lambda: live[0].id in fw.book.notices.rebalancing, 5, "the live spot agent rebalancing")
        status = fw.scheduling_status()
        assert status is None or "starving" not in status
    finally:
        follower.stop()


def test_batch_system_options_build_the_book():
    from argparse import ArgumentParser, ArgumentTypeError
    from types import SimpleNamespace

    from toil.common import InconsistentConfigurationError

    from plastic.framework.toil_batch import PlasticBatchSystem
    from plastic.framework.toil_options import book_from, seconds_or_off

    parser = ArgumentParser()
    PlasticBatchSystem.add_options(parser)
    opts = parser.parse_args(["--plasticRebalance", "drain", "--plasticIdleAgentSeconds", "off",
                              "--plasticStarvingSeconds", "90"])
    book = book_from(opts)
    cfg = book.config()
    assert (cfg["rebalance"], cfg["idle_agent_s"], cfg["starving_s"]) == ("drain", None, 90.0)
    defaults = book_from(SimpleNamespace())  # Toil's Config drops options left at None
    cfg = defaults.config()
    assert (cfg["rebalance"], cfg["idle_agent_s"], cfg["starving_s"]) == ("avoid-long", 300.0, 300.0)
    with pytest.raises(SystemExit):
        parser.parse_args(["--plasticRebalance", "sometimes"])
    for bad in ("-1", "soon", "inf"):
        with pytest.raises(ArgumentTypeError):
            seconds_or_off(bad)
    with pytest.raises(InconsistentConfigurationError, match="rebalance"):
        book_from(SimpleNamespace(plastic_rebalance="sometimes"))
