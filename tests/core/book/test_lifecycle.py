"""The transition tables of runs, tasks and agents (plastic/core/book/lifecycle.py)."""

from __future__ import annotations

import pytest

from plastic.core.book.lifecycle import (
    AGENT_TRANSITIONS,
    RUN_TRANSITIONS,
    TASK_TRANSITIONS,
    AgentState,
    RunState,
    TaskState,
    TransitionError,
    allowed,
    check_transition,
    is_terminal,
)


def reachable(table, start):
    seen, todo = {start}, [start]
    while todo:
        for nxt in table[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_every_state_has_a_row_and_every_target_is_a_state():
    for table, states in ((TASK_TRANSITIONS, TaskState), (AGENT_TRANSITIONS, AgentState), (RUN_TRANSITIONS, RunState)):
        assert set(table) == set(states)
        for targets in table.values():
            assert targets <= set(states)


def test_every_task_state_is_reachable_and_can_end():
    assert reachable(TASK_TRANSITIONS, TaskState.QUEUED) == set(TaskState)
    terminal = {s for s in TaskState if is_terminal("task", s)}
    assert terminal == {TaskState.FINISHED, TaskState.FAILED, TaskState.KILLED}
    for s in TaskState:
        assert reachable(TASK_TRANSITIONS, s) & terminal


def test_a_lost_task_is_requeued_not_ended():
    assert allowed("task", "RUNNING", "LOST") and allowed("task", "LOST", "QUEUED")
    assert not is_terminal("task", "LOST")
    assert not allowed("task", "FINISHED", "QUEUED")


def test_check_transition_names_the_record_and_both_states():
    check_transition("agent", "S1", "ACTIVE", "DRAINING")
    with pytest.raises(TransitionError) as err:
        check_transition("task", "sort[3]", "FINISHED", "RUNNING")
    assert "sort[3]" in str(err.value) and "FINISHED" in str(err.value) and "RUNNING" in str(err.value)
    assert err.value.current == "FINISHED" and err.value.wanted == "RUNNING"
    assert not allowed("task", "RUNNING", "NO_SUCH_STATE")
    assert not allowed("run", "SUCCEEDED", "RUNNING")
