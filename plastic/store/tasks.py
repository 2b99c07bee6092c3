"""`TaskRecords`: the tasks part of `Store` (plastic.store.part): a run's tasks, their states and the
attempts each task ended."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from plastic.core.book.lifecycle import TaskState
from plastic.store.part import StorePart
from plastic.store.records import TASK_FIELDS, AttemptRecord, TaskRecord, Transition
from plastic.store.scripts import INITIAL
from plastic.store.transitions import TransitionCall, run_script

if TYPE_CHECKING:
    from redis.client import Pipeline

    from plastic.store.scripts import LuaScript

# Task states in which a task occupies an agent.
ACTIVE_TASK_STATES: tuple[TaskState, ...] = (
    TaskState.LAUNCHING,
    TaskState.STARTING,
    TaskState.RUNNING,
    TaskState.KILLING,
)


class TaskRecords(StorePart):
    add_chunk: int  # tasks per ADD_TASKS script call
    _add_tasks: LuaScript

    def add_tasks(
        self,
        run_id: str,
        tasks: Mapping[str, Any] | Iterable[tuple[str, Any]],
        *,
        pipeline: Pipeline | None = None,
    ) -> list[str] | None:
        """Add tasks (id -> spec, any JSON value) in state QUEUED; ids already present are left alone.

        Returns the ids actually added (None with a pipeline).  Each chunk of ``add_chunk`` tasks is
        one atomic script; as the call is idempotent, retrying after a failure is safe."""
        items = list(tasks.items() if isinstance(tasks, Mapping) else tasks)
        state = INITIAL["task"]
        keys = [
            self.keys.run(run_id),
            self.keys.run_tasks(run_id),
            self.keys.task_state(run_id, state),
            self.keys.events(run_id),
        ]
        head = [run_id, state, self.keys.task_prefix(run_id), str(self.events_maxlen)]
        added: list[str] = []
        for start in range(0, len(items), self.add_chunk):
            args = list(head)
            for task_id, spec in items[start : start + self.add_chunk]:
                args += [str(task_id), json.dumps(spec, sort_keys=True)]
            result = run_script(self._add_tasks, keys, args, pipeline)
            if pipeline is None:
                added += result
        return None if pipeline is not None else added

    def get_task(self, run_id: str, task_id: str) -> TaskRecord | None:
        raw = self.client.hgetall(self.keys.task(run_id, task_id))
        return TaskRecord.from_hash(raw) if raw else None

    def get_tasks(self, run_id: str, task_ids: Iterable[str] | None = None) -> list[TaskRecord]:
        """Task records in the given order (default: every task, in the order added); unknown ids skipped."""
        ids = self.task_ids(run_id) if task_ids is None else list(task_ids)
        return [
            t for t in self._hashes([self.keys.task(run_id, i) for i in ids], TaskRecord.from_hash) if t is not None
        ]

    def task_ids(self, run_id: str) -> list[str]:
        return self.client.zrange(self.keys.run_tasks(run_id), 0, -1)

    def tasks_in_state(self, run_id: str, state: TaskState | str) -> set[str]:
        return set(self.client.smembers(self.keys.task_state(run_id, TaskState(state))))

    def task_counts(self, run_id: str) -> dict[TaskState, int]:
        """How many tasks of the run are in each state (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        for state in TaskState:
            pipe.scard(self.keys.task_state(run_id, state))
        return dict(zip(TaskState, pipe.execute(), strict=True))

    def tasks_on_agent(
        self, run_id: str, agent_id: str, states: Iterable[TaskState | str] = ACTIVE_TASK_STATES
    ) -> list[str]:
        """Ids of the run's tasks in ``states`` whose ``agent`` field names this agent."""
        pipe = self.client.pipeline(transaction=False)
        for state in states:
            pipe.smembers(self.keys.task_state(run_id, TaskState(state)))
        ids = sorted(set().union(*pipe.execute()))
        pipe = self.client.pipeline(transaction=False)
        for task_id in ids:
            pipe.hget(self.keys.task(run_id, task_id), "agent")
        return [task_id for task_id, agent in zip(ids, pipe.execute(), strict=True) if agent == agent_id]

    def transition_task(
        self,
        run_id: str,
        task_id: str,
        new_state: TaskState | str,
        *,
        expected: TaskState | str | None = None,
        fields: Mapping[str, Any] | None = None,
        incr: Mapping[str, int] | None = None,
        event: Mapping[str, Any] | None = None,
        attempt: AttemptRecord | None = None,
        pipeline: Pipeline | None = None,
    ) -> Transition | None:
        """Move a task to ``new_state`` if the table allows it (and it is in ``expected`` when given).

        In the same atomic step: set ``fields`` (None deletes a field; ``agent`` names the agent),
        add ``incr`` to counters, append ``attempt`` to the task's attempts and the transition
        event (with ``event``'s extra fields) to the run's stream.  Entering LAUNCHING counts a
        new attempt (``attempts`` + 1).  Raises TransitionError (both states) when refused,
        UnknownRecordError when the task does not exist."""
        new_state = TaskState(new_state)
        increments = dict(incr or {})
        if new_state is TaskState.LAUNCHING:
            increments["attempts"] = increments.get("attempts", 0) + 1
        call = TransitionCall(
            "task",
            task_id,
            self.keys.task(run_id, task_id),
            self.keys.events(run_id),
            self.keys.task_state_prefix(run_id),
            TASK_FIELDS,
            attempts_key=self.keys.task_attempts(run_id, task_id),
        )
        return call(
            self._transition,
            new_state,
            expected=None if expected is None else TaskState(expected),
            fields=fields,
            incr=increments,
            event=event,
            attempt=attempt,
            maxlen=self.events_maxlen,
            pipeline=pipeline,
        )

    def record_attempt(self, run_id: str, task_id: str, attempt: AttemptRecord, *, pipeline: Pipeline | None = None) -> None:
        """Append an ended attempt (prefer ``transition_task(..., attempt=)``, which does it atomically)."""
        (pipeline or self.client).rpush(self.keys.task_attempts(run_id, task_id), attempt.to_json())

    def attempts(self, run_id: str, task_id: str) -> list[AttemptRecord]:
        return [AttemptRecord.from_json(text) for text in self.client.lrange(self.keys.task_attempts(run_id, task_id), 0, -1)]
