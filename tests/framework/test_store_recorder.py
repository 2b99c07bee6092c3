"""The Framework's records as a run in a real Redis: task and agent records, attempts, events, runtimes."""

from __future__ import annotations

import itertools
import json
import logging

from plastic.core.book.events import NoticeReceived, Tick
from plastic.core.book.lifecycle import TaskState
from plastic.core.book.records import JobPlaceableAgain, JobQueued, TaskStateChanged
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt, Resources
from plastic.framework.adapter import Framework
from plastic.framework.launcher import TaskCommand
from plastic.framework.store_recorder import StoreRecorder, preempt_json
from plastic.store import AttemptOutcome
from tests.fakes.driver import FakeDriver, offer

_uuids = itertools.count()


def make(store, run_id, tmp_path=None):
    ticks = itertools.count(100)
    rec = StoreRecorder(store, run_id)
    ended: list = []
    fw = Framework("http://x", driver_factory=FakeDriver, on_ended=ended.append, clock=lambda: float(next(ticks)),
                   recorders=[rec], record_path=tmp_path / "rec.jsonl" if tmp_path else None)
    fw.registered(fw.driver, {"value": "fw-1"}, {})
    return fw, fw.driver, rec, ended


def status(fw, task, state, agent, **extra):
    fw.statusUpdate(fw.driver, {"task_id": {"value": task}, "state": state, "agent_id": {"value": agent},
                                "uuid": f"u{next(_uuids)}", **extra})


def events(store, run_id, kind):
    return [e.fields for e in store.read_events(run_id) if e.type == kind]


def test_a_run_in_redis(store, run_id, tmp_path):
    fw, d, rec, ended = make(store, run_id, tmp_path)
    fw.issue("7", TaskCommand("sort"), Resources(2, 512), RELIABLE, tool="plastic_sort",
             name="CWLJob wf.cwl.sort.plastic_sort", step="main/sort")
    fw.issue("8", TaskCommand("split"), Resources(1, 256), PREEMPTIBLE, name="CWLJob wf.cwl.0.plastic_split",
             tool="plastic_split")
    fw.resourceOffers(d, [offer("o1", "a1", 4, 8192, port=5051), offer("o2", "a2", 2, 2048, True, port=5052)])
    placed = {t["task_id"]["value"]: t["agent_id"]["value"] for c in d.of("launchTasks") for t in c[1][1]}
    assert placed == {"7.1": "a1", "8.1": "a2"}
    status(fw, "7.1", "TASK_RUNNING", "a1")
    status(fw, "8.1", "TASK_RUNNING", "a2")
    status(fw, "7.1", "TASK_FINISHED", "a1")
    fw.slaveLost(d, {"value": "a2"})  # 8 is requeued as a preemption
    fw.resourceOffers(d, [offer("o3", "a1", 2, 4096, port=5051)])
    status(fw, "8.2", "TASK_RUNNING", "a1")
    assert not fw.kill("8", wait_s=0)
    status(fw, "8.2", "TASK_KILLED", "a1")
    fw.issue("9", TaskCommand("true"), Resources(1, 64), Preempt(2))
    fw.kill("9", wait_s=0)  # killed while queued: no attempt
    assert rec.flush(10)
    fw.stop(kill_tasks=False)
    assert [(e.job_id, e.outcome) for e in ended] == [("7", "finished"), ("8", "killed"), ("9", "killed")]

    t7, t8, t9 = store.get_tasks(run_id, ["7", "8", "9"])
    assert t7.state == "FINISHED" and t7.agent == "a1" and t7.attempts == 1
    assert t7.spec == {"name": "CWLJob wf.cwl.sort.plastic_sort", "tool": "plastic_sort", "step": "main/sort",
                       "vcpus": 2, "ram_mib": 512, "preempt": False, "instance_type": None}
    assert t7.fields["cluster"] == "core" and t7.fields["outcome"] == "finished" and t7.fields["exit_code"] == "0"
    (a,) = store.attempts(run_id, "7")
    assert (a.number, a.outcome, a.agent, a.exit_code, a.mesos_task_id) == (1, AttemptOutcome.FINISHED, "a1", 0, "7.1")
    assert a.started_at <= a.ended_at and a.extra["cluster"] == "core" and a.extra["wall_time_s"] > 0
    assert store.runtime_history("plastic_sort") == [a.extra["wall_time_s"]]

    assert t8.state == "KILLED" and t8.attempts == 2 and t8.fields["preemptions"] == "1"
    a1, a2 = store.attempts(run_id, "8")
    assert (a1.number, a1.outcome, a1.agent, a1.reason) == (1, AttemptOutcome.PREEMPTED, "a2", "agent_lost")
    assert (a2.number, a2.outcome, a2.agent) == (2, AttemptOutcome.KILLED, "a1")
    assert store.runtime_history("plastic_split") == []
    assert t9.state == "KILLED" and t9.attempts == 0 and store.attempts(run_id, "9") == []
    assert t9.spec["preempt"] == 2

    core, burst = store.get_agent("a1"), store.get_agent("a2")
    assert (core.state, core.cluster, core.preemptible, core.hostname) == ("ACTIVE", "core", False, "127.0.0.1")
    assert core.resources == {"vcpus": 4, "ram_mib": 8192} and core.fields["address"] == "127.0.0.1:5051"
    assert (burst.state, burst.preemptible) == ("GONE", True)
    assert store.load_framework_id(run_id) == "fw-1"

    issued = events(store, run_id, "issued")
    assert issued[0]["name"] == "CWLJob wf.cwl.sort.plastic_sort" and issued[0]["step"] == "main/sort"
    p = [(e["job_id"], e["task"], e["cluster"], e["preemptible"]) for e in events(store, run_id, "placed")]
    assert sorted(p) == [("7", "7.1", "core", "false"), ("8", "8.1", "burst", "true"), ("8", "8.2", "core", "false")]
    e7 = next(e for e in events(store, run_id, "ended") if e["job_id"] == "7")
    assert (e7["outcome"], e7["exit_code"], e7["cluster"], e7["state"]) == ("finished", "0", "core", "FINISHED")
    assert float(e7["wall_time_s"]) > 0 and float(e7["at"]) > 0
    assert "reason" not in e7  # None fields are left out
    assert events(store, run_id, "requeue")[0]["counted_as"] == "preempted"
    moves = [(e.fields["id"], e.fields["to"]) for e in store.read_events(run_id)
             if e.type == "transition" and e.fields["kind"] == "task" and e.fields["id"] == "8"]
    assert [to for _, to in moves] == ["LAUNCHING", "RUNNING", "LOST", "QUEUED", "LAUNCHING", "RUNNING",
                                       "KILLING", "KILLED"]
    assert rec.writer.refused == 0 and rec.writer.dropped == 0
    lines = [json.loads(x) for x in (tmp_path / "rec.jsonl").read_text().splitlines()]
    assert [x["kind"] for x in lines if x["kind"] == "ended"] == ["ended"] * 3  # JSON lines kept too


def test_notice_drains_the_agent_and_records_the_preemption(store, run_id):
    fw, d, rec, _ = make(store, run_id)
    fw.issue("1", TaskCommand("long"), Resources(1, 256), Preempt(1), tool="t")
    fw.resourceOffers(d, [offer("o1", "b1", 2, 2048, True)])
    status(fw, "1.1", "TASK_RUNNING", "b1")
    fw.apply(NoticeReceived("b1", terminate_at=fw.clock() + 120))
    status(fw, "1.1", "TASK_KILLED", "b1")
    assert rec.flush(10)
    fw.stop(kill_tasks=False)
    agent = store.get_agent("b1")
    assert agent.state == "DRAINING" and agent.notice_at is not None
    assert float(agent.fields["terminate_at"]) > agent.notice_at
    task = store.get_task(run_id, "1")
    assert task.state == "QUEUED" and task.agent is None and task.fields["kill_cause"] == "notice"
    (a,) = store.attempts(run_id, "1")
    assert a.outcome == AttemptOutcome.PREEMPTED and a.notice_at == agent.notice_at and a.reason == "notice_kill"
    assert events(store, run_id, "escalation") and events(store, run_id, "drain_kill")


def test_a_refused_move_is_logged_not_raised(store, run_id, caplog):
    """The recorder stores what it is given; a move Redis refuses (not in the table, or a task never
    issued) is logged by the writer, and every record still reaches the stream."""
    rec = StoreRecorder(store, run_id)
    caplog.set_level(logging.ERROR)
    try:
        rec.step(Tick(), 0.0, [JobQueued("1", 1, 1, "true", None, None),
                               TaskStateChanged("1", TaskState.QUEUED, TaskState.RUNNING, "running"),
                               TaskStateChanged("2", TaskState.LAUNCHING, TaskState.FINISHED, "ended finished"),
                               JobPlaceableAgain("1")], [])
        assert rec.flush(10)
    finally:
        rec.close(5)
    assert rec.writer.refused == 2
    assert store.get_task(run_id, "1").state == "QUEUED"
    assert "QUEUED" in caplog.text and "RUNNING" in caplog.text and "task 2" in caplog.text
    assert [e.type for e in store.read_events(run_id) if e.type in ("issued", "placeable_again")] == \
        ["issued", "placeable_again"]


def test_preempt_json():
    assert [preempt_json(x) for x in ("true", "false", "3", True, 2, None, "x")] == \
        [True, False, 3, True, 2, None, None]


def test_a_job_lost_for_good_ends_failed_in_redis_as_toil_is_told(store, run_id):
    """A reliable job lost more often than the relaunch limit ends FAILED in the JobBook, and Toil is
    told LOST/FAILED; the run's record in Redis says FAILED too (it used to stay LOST for ever)."""
    fw, d, rec, ended = make(store, run_id)
    fw.issue("5", TaskCommand("work"), Resources(1, 256), RELIABLE, tool="plastic_work")
    limit = fw.book.max_lost_relaunches
    for n in range(limit + 1):
        agent = f"core{n}"
        fw.resourceOffers(d, [offer(f"o{n}", agent, 2, 2048, port=5100 + n)])
        status(fw, f"5.{n + 1}", "TASK_RUNNING", agent)
        fw.slaveLost(d, {"value": agent})
    assert rec.flush(10)
    fw.stop(kill_tasks=False)
    assert [(e.job_id, e.outcome) for e in ended] == [("5", "lost_for_good")]
    assert fw.book.jobs["5"].state == "FAILED"
    task = store.get_task(run_id, "5")
    assert task.state == "FAILED", f"Redis says {task.state}, the JobBook FAILED"
    assert task.attempts == limit + 1
    assert [a.outcome for a in store.attempts(run_id, "5")] == [AttemptOutcome.LOST] * (limit + 1)
    assert rec.writer.refused == 0
