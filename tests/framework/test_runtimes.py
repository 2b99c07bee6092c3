"""Runtime estimates for notice decisions: learnt from this run's finished jobs (the book) and from the
history the Framework loads from Redis when the book asks (LoadRuntimeHistory -> RuntimeHistoryLoaded)."""

from __future__ import annotations

import pytest

from plastic.core.book.events import JobIssued, RuntimeHistoryLoaded
from plastic.core.book.runtimes import RuntimeHistory
from plastic.core.model import PREEMPTIBLE, Resources
from plastic.framework.adapter import Framework
from plastic.framework.launcher import TaskCommand
from plastic.framework.run_store import runtime_history
from plastic.store import Store, start_embedded
from tests.fakes.driver import FakeDriver, offer
from tests.fakes.records import Kinds
from tests.waiting import eventually


def test_learns_finished_wall_times_per_tool():
    est = RuntimeHistory(q=90.0)
    assert est.estimate("plastic_sort") is None and est.estimate(None) is None
    for wall in (10.0, 20.0, 30.0):
        est.observed("plastic_sort", wall)
    assert est.estimate("plastic_sort") == pytest.approx(28.0)  # p90 of 10, 20, 30
    assert est.estimate("plastic_merge") is None
    est.loaded("plastic_sort", [1000.0] * 300)  # history goes behind this run's values, up to the limit
    assert list(est.by_tool["plastic_sort"])[:3] == [30.0, 20.0, 10.0] and len(est.by_tool["plastic_sort"]) == 200


def test_a_finished_job_teaches_the_book_a_failed_one_does_not():
    fw = Framework("http://x", driver_factory=FakeDriver, clock=lambda: 100.0)
    fw.registered(fw.driver, {"value": "fw-1"}, {})
    for job, state in (("1", "TASK_FINISHED"), ("2", "TASK_FAILED")):
        fw.issue(job, TaskCommand("true"), Resources(1, 64), PREEMPTIBLE, tool="t")
        fw.resourceOffers(fw.driver, [offer(f"o{job}", "a1", 2, 2048)])
        fw.statusUpdate(fw.driver, {"task_id": {"value": f"{job}.1"}, "state": "TASK_RUNNING", "uuid": f"r{job}"})
        fw.statusUpdate(fw.driver, {"task_id": {"value": f"{job}.1"}, "state": state, "uuid": f"e{job}"})
    assert list(fw.book.runtimes.by_tool["t"]) == [pytest.approx(0.001)]  # the failure added nothing


def framework_with_history(store, planned=None, recorders=()):
    fw = Framework("http://x", driver_factory=FakeDriver, clock=lambda: 100.0,
                   runtime_history=runtime_history(store, planned or {}), recorders=recorders)
    fw.registered(fw.driver, {"value": "fw-1"}, {})
    return fw


def test_history_is_loaded_from_redis_the_first_time_a_tool_is_issued(store):
    for seconds in (100.0, 110.0, 120.0):
        store.record_runtime("plastic_align", seconds)
    fw = framework_with_history(store)
    try:
        fw.apply(JobIssued("1", Resources(1, 64), PREEMPTIBLE, tool="plastic_align"))
        eventually(lambda: fw.book.estimate("plastic_align") is not None, 5, "plastic_align's history loaded")
        assert fw.book.runtimes.by_tool["plastic_align"] == type(fw.book.runtimes.by_tool["plastic_align"])(
            [120.0, 110.0, 100.0])
        assert fw.book.estimate("plastic_align") == pytest.approx(118.0)  # p90
    finally:
        fw.stop(kill_tasks=False)


def test_redis_gone_answers_no_history_and_the_run_goes_on(tmp_path):
    server = start_embedded(tmp_path / "r")
    client = server.client()
    store = Store(client, prefix="gone:")
    server.stop()
    rec = Kinds()
    fw = framework_with_history(store, recorders=[rec])
    try:
        fw.apply(JobIssued("1", Resources(1, 64), PREEMPTIBLE, tool="t"))
        assert "t" in fw.book.runtimes.by_tool
        (answer,) = eventually(lambda: [e for e in rec.events if isinstance(e, RuntimeHistoryLoaded)], 5,
                               "the answer to the history question (Redis is gone)")
        assert answer == RuntimeHistoryLoaded("t", ())  # applied: nothing known
        assert fw.questions.empty()
        assert fw.book.estimate("t") is None
    finally:
        fw.stop(kill_tasks=False)
        client.close()


def test_a_plan_with_runtimes_gives_each_tool_the_runtimes_of_its_step():
    """plastic.core.book.runtimes.planned_runtimes: the plan's tasks (one per step or scatter element) by the
    step each policy tool runs; a step without runtimes, and a tool without a step, give nothing."""
    from plastic.core.book.runtimes import planned_runtimes
    from plastic.core.model import RELIABLE, TaskSpec

    tasks = [TaskSpec("split", 1, 512, RELIABLE, 12.0),
             *(TaskSpec(f"per/sort[{i}]", 1, 512, PREEMPTIBLE, 30.0 + i) for i in range(3)),
             TaskSpec("merge", 1, 512, RELIABLE, None)]
    got = planned_runtimes(tasks, {"plastic_split": "split", "plastic_per_sort": "per/sort", "plastic_merge": "merge",
                                   "plastic_other": None})
    assert got == {"plastic_split": (12.0,), "plastic_per_sort": (30.0, 31.0, 32.0)}
    est = RuntimeHistory(q=90.0)
    est.loaded("plastic_per_sort", got["plastic_per_sort"])
    assert est.estimate("plastic_per_sort") == pytest.approx(31.8)


def test_the_plan_s_runtimes_answer_for_a_tool_the_store_has_no_history_of(store):
    """The batch system's answer (plastic.framework.run_store.runtime_history): Redis's history first
    (this and earlier runs), else the plan's runtimes for the tool's step; without a store, the plan's."""
    store.record_runtime("plastic_align", 100.0)
    planned = {"plastic_align": (5.0,), "plastic_sort": (30.0, 32.0)}
    answer = runtime_history(store, planned)
    assert answer("plastic_align") == [100.0] and answer("plastic_sort") == (30.0, 32.0) and answer("other") == ()
    assert runtime_history(None, planned)("plastic_align") == (5.0,)
    fw = framework_with_history(store, planned)
    try:
        fw.apply(JobIssued("1", Resources(1, 64), PREEMPTIBLE, tool="plastic_sort"))
        eventually(lambda: fw.book.estimate("plastic_sort") is not None, 5, "plastic_sort's planned runtimes loaded")
        assert fw.book.estimate("plastic_sort") == pytest.approx(31.8)  # p90 of the plan's two
    finally:
        fw.stop(kill_tasks=False)
