"""Tasks: idempotent add, every allowed transition, refusals, CAS, fields, counters, pipelines."""

from __future__ import annotations

import pytest

from plastic.core.book.lifecycle import TASK_TRANSITIONS, TaskState, TransitionError, allowed
from plastic.store import Store, UnknownRecordError

from .helpers import bring_task_to

T = TaskState


def states_holding(store, run_id, task_id) -> set[str]:
    return {s for s in TaskState if task_id in store.tasks_in_state(run_id, s)}


def test_add_tasks_is_idempotent(store, run_id):
    assert store.add_tasks(run_id, {"t1": {"cores": 1}, "t2": {"cores": 2}}) == ["t1", "t2"]
    store.transition_task(run_id, "t1", T.LAUNCHING)
    assert store.add_tasks(run_id, {"t1": {"cores": 99}, "t3": {"cores": 3}}) == ["t3"]
    assert store.add_tasks(run_id, [("t3", {}), ("t3", {})]) == []
    t1 = store.get_task(run_id, "t1")
    assert t1.spec == {"cores": 1} and t1.state is T.LAUNCHING
    assert store.task_ids(run_id) == ["t1", "t2", "t3"]
    assert store.tasks_in_state(run_id, T.QUEUED) == {"t2", "t3"}
    added = [e for e in store.read_events(run_id) if e.type == "tasks_added"]
    assert [e.fields["count"] for e in added] == ["2", "1"]


def test_add_tasks_in_chunks_keeps_order(client, prefix):
    store = Store(client, prefix=prefix, add_chunk=3)
    run_id = store.create_run()
    ids = [f"job-{i:02d}" for i in range(10)]
    assert store.add_tasks(run_id, [(i, {"n": n}) for n, i in enumerate(ids)]) == ids
    assert store.task_ids(run_id) == ids
    assert [t.spec["n"] for t in store.get_tasks(run_id)] == list(range(10))
    assert store.task_counts(run_id)[T.QUEUED] == 10


def test_add_tasks_needs_the_run(store):
    with pytest.raises(UnknownRecordError):
        store.add_tasks("nope", {"t1": {}})


def test_task_record_fields(store, run_id):
    store.add_tasks(run_id, {"t:1": {"cmd": "echo", "cores": 1}})
    task = store.get_task(run_id, "t:1")
    assert (task.run, task.id, task.state, task.attempts, task.agent) == (run_id, "t:1", T.QUEUED, 0, None)
    assert task.spec == {"cmd": "echo", "cores": 1}
    assert task.created_at == task.updated_at == task.state_at
    assert store.get_task(run_id, "missing") is None


@pytest.mark.parametrize("source,target", [(s, t) for s, targets in TASK_TRANSITIONS.items() for t in sorted(targets)])
def test_every_allowed_task_transition(store, run_id, source, target):
    store.add_tasks(run_id, {"t1": {}})
    bring_task_to(store, run_id, "t1", source)
    moved = store.transition_task(run_id, "t1", target, expected=source)
    assert (moved.kind, moved.id, moved.previous, moved.current) == ("task", "t1", source, target)
    task = store.get_task(run_id, "t1")
    assert task.state == target and task.state_at == moved.at
    assert states_holding(store, run_id, "t1") == {target}
    event = store.read_events(run_id)[-1]
    assert event.id == moved.event_id and event.type == "transition"
    assert (event.fields["kind"], event.fields["id"], event.fields["from"], event.fields["to"]) == (
        "task",
        "t1",
        source,
        target,
    )


REFUSED = [(s, t) for s in TaskState for t in TaskState if not allowed("task", s, t)]


@pytest.mark.parametrize("source,target", REFUSED)
def test_refused_task_transitions_name_the_task_and_both_states(store, run_id, source, target):
    store.add_tasks(run_id, {"t1": {}})
    bring_task_to(store, run_id, "t1", source)
    before = store.read_events(run_id)
    with pytest.raises(TransitionError) as caught:
        store.transition_task(run_id, "t1", target, fields={"agent": "never"})
    error = caught.value
    assert (error.kind, error.record_id, error.current, error.wanted) == ("task", "t1", source, target)
    assert "t1" in str(error) and source in str(error) and target in str(error)
    assert store.get_task(run_id, "t1").state == source and store.get_task(run_id, "t1").agent is None
    assert states_holding(store, run_id, "t1") == {source}
    assert store.read_events(run_id) == before


def test_expected_state_mismatch_is_refused_even_when_the_table_allows(store, run_id):
    store.add_tasks(run_id, {"t1": {}})
    bring_task_to(store, run_id, "t1", T.STARTING)
    with pytest.raises(TransitionError) as caught:
        store.transition_task(run_id, "t1", T.RUNNING, expected=T.LAUNCHING)  # STARTING -> RUNNING is allowed
    error = caught.value
    assert (error.current, error.expected, error.wanted) == ("STARTING", "LAUNCHING", "RUNNING")
    assert "expected state LAUNCHING, found STARTING" in str(error)
    assert store.get_task(run_id, "t1").state is T.STARTING
    assert store.transition_task(run_id, "t1", T.RUNNING, expected=T.STARTING).previous == "STARTING"


def test_unknown_task(store, run_id):
    with pytest.raises(UnknownRecordError) as caught:
        store.transition_task(run_id, "ghost", T.LAUNCHING)
    assert caught.value.record_id == "ghost"
    assert store.tasks_in_state(run_id, T.LAUNCHING) == set()


def test_fields_counters_and_the_attempt_count(store, run_id):
    store.add_tasks(run_id, {"t1": {}})
    store.transition_task(run_id, "t1", T.LAUNCHING, fields={"agent": "a1", "mesos_task": "m-1", "offer": {"id": 1}})
    task = store.get_task(run_id, "t1")
    assert task.attempts == 1 and task.agent == "a1"
    assert task.fields == {"mesos_task": "m-1", "offer": '{"id": 1}'}
    store.transition_task(run_id, "t1", T.LOST, incr={"preemptions": 1}, fields={"agent": None})
    store.transition_task(run_id, "t1", T.QUEUED)
    store.transition_task(run_id, "t1", T.LAUNCHING, fields={"agent": "a2"})
    task = store.get_task(run_id, "t1")
    assert task.attempts == 2 and task.agent == "a2" and task.fields["preemptions"] == "1"
    with pytest.raises(ValueError):
        store.transition_task(run_id, "t1", T.RUNNING, fields={"state": "FINISHED"})
    with pytest.raises(ValueError):
        store.transition_task(run_id, "t1", T.RUNNING, event={"to": "x"})
    assert store.get_task(run_id, "t1").state is T.LAUNCHING


def test_counts_and_tasks_on_agent(store, run_id):
    store.add_tasks(run_id, {f"t{i}": {} for i in range(5)})
    for i, agent in enumerate(["a1", "a1", "a2"]):
        store.transition_task(run_id, f"t{i}", T.LAUNCHING, fields={"agent": agent})
    store.transition_task(run_id, "t0", T.RUNNING)
    store.transition_task(run_id, "t1", T.FINISHED)
    counts = store.task_counts(run_id)
    assert counts[T.QUEUED] == 2 and counts[T.LAUNCHING] == 1 and counts[T.RUNNING] == 1 and counts[T.FINISHED] == 1
    assert sum(counts.values()) == 5
    assert store.tasks_on_agent(run_id, "a1") == ["t0"]  # t1 finished: no longer on the agent
    assert store.tasks_on_agent(run_id, "a2") == ["t2"]
    assert store.tasks_on_agent(run_id, "a1", states=[T.FINISHED]) == ["t1"]


def test_transitions_in_a_pipeline(store, run_id):
    store.add_tasks(run_id, {"t1": {}, "t2": {}})
    pipe = store.pipeline()
    assert store.transition_task(run_id, "t1", T.LAUNCHING, pipeline=pipe) is None
    store.transition_task(run_id, "t2", T.LAUNCHING, pipeline=pipe)
    store.execute(pipe)
    assert store.tasks_in_state(run_id, T.LAUNCHING) == {"t1", "t2"}


def test_scripts_survive_a_script_cache_flush(store, run_id):
    """EVALSHA answers NOSCRIPT after a restart or SCRIPT FLUSH: the store falls back to EVAL."""
    store.add_tasks(run_id, {"t1": {}})
    store.client.script_flush()
    store.transition_task(run_id, "t1", T.LAUNCHING)
    store.client.script_flush()
    pipe = store.pipeline()
    store.transition_task(run_id, "t1", T.RUNNING, pipeline=pipe)
    store.execute(pipe)
    assert store.get_task(run_id, "t1").state is T.RUNNING
