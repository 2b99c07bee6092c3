"""Attempts with their reasons: appended atomically with the transition that ends them."""

from __future__ import annotations

import pytest

from plastic.core.book.lifecycle import TaskState, TransitionError
from plastic.store import AttemptOutcome, AttemptRecord

T = TaskState


def test_a_preempted_then_finished_task(store, run_id):
    store.add_tasks(run_id, {"t1": {"tool": "align"}})
    store.transition_task(run_id, "t1", T.LAUNCHING, fields={"agent": "spot-1"})
    store.transition_task(run_id, "t1", T.RUNNING)
    first = AttemptRecord(
        number=1,
        outcome=AttemptOutcome.PREEMPTED,
        agent="spot-1",
        started_at=10.0,
        ended_at=70.0,
        reason="spot notice: terminate",
        notice_at=60.0,
        mesos_task_id=f"{run_id}-t1-a1",
    )
    store.transition_task(run_id, "t1", T.LOST, attempt=first, incr={"preemptions": 1}, event={"reason": "notice"})
    store.transition_task(run_id, "t1", T.QUEUED)
    store.transition_task(run_id, "t1", T.LAUNCHING, fields={"agent": "core-1"})
    store.transition_task(run_id, "t1", T.RUNNING)
    second = AttemptRecord(number=2, outcome=AttemptOutcome.FINISHED, agent="core-1", started_at=80.0, ended_at=95.0, exit_code=0)
    store.transition_task(run_id, "t1", T.FINISHED, attempt=second)
    assert store.attempts(run_id, "t1") == [first, second]
    task = store.get_task(run_id, "t1")
    assert task.attempts == 2 and task.fields["preemptions"] == "1" and task.state is T.FINISHED
    lost_event = next(e for e in store.read_events(run_id) if e.fields.get("to") == "LOST")
    assert lost_event.fields["reason"] == "notice"


@pytest.mark.parametrize(
    "attempt",
    [
        AttemptRecord(1, AttemptOutcome.FAILED, agent="a", exit_code=3, reason="Command exited with status 3"),
        AttemptRecord(1, AttemptOutcome.LOST, agent="a", reason="REASON_AGENT_REMOVED", extra={"mesos_state": "TASK_UNREACHABLE"}),
        AttemptRecord(1, AttemptOutcome.KILLED, reason="killed by the leader"),
    ],
)
def test_outcomes_round_trip(store, run_id, attempt):
    store.add_tasks(run_id, {"t1": {}})
    store.transition_task(run_id, "t1", T.LAUNCHING)
    store.record_attempt(run_id, "t1", attempt)
    [back] = store.attempts(run_id, "t1")
    assert back == attempt and isinstance(back.outcome, AttemptOutcome)


def test_a_refused_transition_records_no_attempt(store, run_id):
    store.add_tasks(run_id, {"t1": {}})
    with pytest.raises(TransitionError):
        store.transition_task(run_id, "t1", T.RUNNING, attempt=AttemptRecord(1, AttemptOutcome.FINISHED))
    assert store.attempts(run_id, "t1") == []


def test_record_attempt_in_a_pipeline(store, run_id):
    store.add_tasks(run_id, {"t1": {}})
    pipe = store.pipeline()
    store.record_attempt(run_id, "t1", AttemptRecord(1, AttemptOutcome.LOST), pipeline=pipe)
    store.record_attempt(run_id, "t1", AttemptRecord(2, AttemptOutcome.FINISHED), pipeline=pipe)
    assert store.attempts(run_id, "t1") == []
    store.execute(pipe)
    assert [a.number for a in store.attempts(run_id, "t1")] == [1, 2]
