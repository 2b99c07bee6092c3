"""Property: whatever transitions are attempted, each task sits in exactly one per-state set,
the one its hash names, and the store agrees with the Python table on every attempt."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plastic.core.book.lifecycle import TaskState, TransitionError, allowed
from plastic.store import Store

TASKS = ["a", "b", "c"]

attempts = st.lists(
    st.tuples(
        st.sampled_from(TASKS),
        st.sampled_from(list(TaskState)),
        st.one_of(st.none(), st.sampled_from(list(TaskState))),
    ),
    max_size=40,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=attempts)
def test_state_sets_always_match_the_hashes(client, steps):
    store = Store(client, prefix=f"p-{uuid.uuid4().hex[:12]}:")
    run_id = store.create_run()
    store.add_tasks(run_id, {t: {} for t in TASKS})
    model = {t: TaskState.QUEUED for t in TASKS}
    for task, target, expected in steps:
        should_move = allowed("task", model[task], target) and (expected is None or expected == model[task])
        try:
            moved = store.transition_task(run_id, task, target, expected=expected)
        except TransitionError as error:
            assert not should_move
            assert (error.current, error.wanted) == (model[task], target)
        else:
            assert should_move
            assert moved.previous == model[task]
            model[task] = target
        check(store, run_id, model)


def check(store: Store, run_id: str, model: dict[str, TaskState]) -> None:
    pipe = store.client.pipeline(transaction=False)
    for state in TaskState:
        pipe.smembers(store.keys.task_state(run_id, state))
    members = dict(zip(TaskState, pipe.execute(), strict=True))
    for task, state in model.items():
        holding = {s for s, ids in members.items() if task in ids}
        assert holding == {state}
        assert store.client.hget(store.keys.task(run_id, task), "state") == state
    assert sum(len(ids) for ids in members.values()) == len(model)
