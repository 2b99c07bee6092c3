"""Run records: create, get, list, transitions, framework id."""

from __future__ import annotations

import pytest

from plastic.core.book.lifecycle import RUN_TRANSITIONS, RunState, TransitionError
from plastic.store import RecordExistsError, Store, UnknownRecordError

from .helpers import path_to


def test_create_and_get(store):
    run_id = store.create_run("r1", fields={"workflow": "wf.cwl", "budget": 2.5})
    run = store.get_run(run_id)
    assert run.id == "r1"
    assert run.state is RunState.SUBMITTED
    assert run.fields == {"workflow": "wf.cwl", "budget": "2.5"}
    assert run.created_at == run.updated_at == run.state_at > 0
    assert store.client.sismember(store.keys.run_state("SUBMITTED"), "r1")
    [event] = store.read_events("r1")
    assert event.type == "run_created" and event.fields["id"] == "r1" and event.fields["to"] == "SUBMITTED"


def test_generated_ids_are_unique_and_valid(store):
    ids = {store.create_run() for _ in range(20)}
    assert len(ids) == 20
    assert all(i.startswith("r") for i in ids)


def test_create_twice_is_refused(store):
    store.create_run("r1")
    with pytest.raises(RecordExistsError):
        store.create_run("r1", fields={"workflow": "other"})
    assert store.get_run("r1").fields == {}


def test_reserved_fields_cannot_be_set(store):
    with pytest.raises(ValueError):
        store.create_run("r1", fields={"state": "RUNNING"})
    assert store.get_run("r1") is None


def test_missing_run(store):
    assert store.get_run("nope") is None
    with pytest.raises(UnknownRecordError):
        store.transition_run("nope", RunState.PLANNING)


def test_list_runs_newest_first_and_by_state(store):
    for name in ("a", "b", "c"):
        store.create_run(name)
    store.transition_run("b", RunState.PLANNING)
    assert [r.id for r in store.list_runs()] == ["c", "b", "a"]
    assert [r.id for r in store.list_runs(RunState.SUBMITTED)] == ["c", "a"]
    assert [r.id for r in store.list_runs("PLANNING")] == ["b"]
    assert store.list_runs(RunState.RUNNING) == []


def test_prefixes_isolate_stores(client, store):
    store.create_run("r1")
    other = Store(client, prefix=store.keys.prefix + "other:")
    assert other.list_runs() == [] and other.get_run("r1") is None


@pytest.mark.parametrize("source,target", [(s, t) for s, targets in RUN_TRANSITIONS.items() for t in sorted(targets)])
def test_every_allowed_run_transition(store, source, target):
    store.create_run("r1")
    for state in path_to("run", "SUBMITTED", source):
        store.transition_run("r1", state)
    moved = store.transition_run("r1", target, expected=source, fields={"note": "x"}, event={"why": "test"})
    assert (moved.previous, moved.current) == (source, target)
    run = store.get_run("r1")
    assert run.state == target and run.fields["note"] == "x" and run.state_at == moved.at
    members = {s for s in RunState if store.client.sismember(store.keys.run_state(s), "r1")}
    assert members == {target}
    last = store.read_events("r1")[-1]
    assert last.id == moved.event_id
    assert last.fields == {
        "kind": "run",
        "id": "r1",
        "from": source,
        "to": target,
        "at": last.fields["at"],
        "why": "test",
    }


def test_refused_run_transitions(store):
    store.create_run("r1")
    with pytest.raises(TransitionError) as caught:
        store.transition_run("r1", RunState.SUCCEEDED)
    assert (caught.value.record_id, caught.value.current, caught.value.wanted) == ("r1", "SUBMITTED", "SUCCEEDED")
    store.transition_run("r1", RunState.CANCELLED)
    for target in RunState:
        with pytest.raises(TransitionError):
            store.transition_run("r1", target)
    assert store.get_run("r1").state is RunState.CANCELLED


def test_unknown_state_names_fail_before_reaching_redis(store):
    store.create_run("r1")
    with pytest.raises(ValueError):
        store.transition_run("r1", "DONE")


def test_framework_id(store):
    store.create_run("r1")
    assert store.load_framework_id("r1") is None
    store.save_framework_id("r1", "fw-1")
    store.save_framework_id("r1", "fw-2")
    assert store.load_framework_id("r1") == "fw-2"


def test_incarnations(store):
    store.create_run("r1")
    assert store.incarnation("r1") == 0
    assert [store.next_incarnation("r1") for _ in range(3)] == [1, 2, 3]
    assert store.incarnation("r1") == 3


def test_create_run_and_submission_in_one_transaction(store):
    pipe = store.pipeline()
    run_id = store.create_run(pipeline=pipe)
    store.push_submission({"run": run_id}, pipeline=pipe)
    assert store.get_run(run_id) is None  # nothing sent yet
    store.execute(pipe)
    assert store.get_run(run_id).state is RunState.SUBMITTED
    assert store.pop_submission() == {"run": run_id}


def test_pipelined_refusal_raises_on_execute(store):
    store.create_run("r1")
    pipe = store.pipeline()
    store.transition_run("r1", RunState.PLANNING, pipeline=pipe)
    store.transition_run("r1", RunState.SUCCEEDED, pipeline=pipe)  # PLANNING -> SUCCEEDED: refused
    with pytest.raises(TransitionError) as caught:
        store.execute(pipe)
    assert (caught.value.current, caught.value.wanted) == ("PLANNING", "SUCCEEDED")
    assert store.get_run("r1").state is RunState.PLANNING  # no rollback in Redis: the first one stays


def test_run_fields_set_and_counted_without_a_transition(store):
    run_id = store.create_run("r-fields", fields={"workflow": "wf.cwl"})
    before = store.get_run(run_id)
    store.set_run_fields(run_id, {"pid": 4242, "workflow": None})
    assert store.count_run_field(run_id, "resumes") == 1
    assert store.count_run_field(run_id, "resumes") == 2
    run = store.get_run(run_id)
    assert run.fields == {"pid": "4242", "resumes": "2"} and run.state is before.state
    with pytest.raises(ValueError, match="managed by the store"):
        store.set_run_fields(run_id, {"state": "RUNNING"})
    with pytest.raises(ValueError, match="managed by the store"):
        store.count_run_field(run_id, "updated_at")
    assert store.get_run(run_id).state is RunState.SUBMITTED
