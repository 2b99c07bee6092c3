"""The master's tasks and their status updates (a mixin of MasterState, no I/O): launch, the updates
agents report and their delivery to the framework, acknowledgements, KILL, reconciliation.

As on Mesos 1.11, the master's view of a task is the latest state its agent reported (so resources
come back at once), while the updates themselves reach the framework one at a time per task, each
re-sent until acknowledged (the state's "retry" timer, doubling up to MAX_RETRY_SECONDS).  A finished
task is kept among its framework's completed ones (the last MAX_COMPLETED_TASKS).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from plastic.local import protocol as P
from plastic.local.effects import Kill, Launch, ToExecutor
from plastic.local.executors import ExecutorRecord, executor_id_of
from plastic.local.model import Agent, RegisteredFramework, Task
from plastic.local.resources import ResourceBag

log = logging.getLogger(__name__)

MAX_COMPLETED_TASKS = 1000
MAX_RETRY_SECONDS = 600.0


class TaskBook:
    """The task half of MasterState (a mixin over its frameworks, agents and timers)."""

    agents: dict[str, Agent]
    frameworks: dict[str, RegisteredFramework]
    needs_allocation: bool
    update_retry_s: float
    kill_grace_s: float
    launched: int
    _timer: Callable[..., None]
    _send: Callable[..., None]
    _check_drained: Callable[[Agent], None]
    executor_for: Callable[[Agent, str, Mapping[str, Any]], ExecutorRecord | None]
    run_in_executor: Callable[..., None]
    kill_in_executor: Callable[[Task, float | None], ToExecutor]
    acknowledged_in_executor: Callable[[Task, Mapping[str, Any], list], None]

    def launch(self, fw: RegisteredFramework, agent: Agent, info: dict[str, Any], resources: ResourceBag,
               container_id: str, effects: list) -> None:
        tid = info["task_id"]["value"]
        record = self.executor_for(agent, fw.id, info)
        if executor_id_of(info) and record is None:  # a new executor holds its own share of `resources`
            resources = resources - ResourceBag.from_json(info["executor"].get("resources") or [])
        task = Task(tid, str(info.get("name", tid)), fw.id, agent.id, resources, container_id,
                    kill_grace_s=grace_period(info.get("kill_policy")))
        fw.tasks[tid] = task
        fw.completed.pop(tid, None)
        agent.tasks.add((fw.id, tid))
        agent.used = agent.used + resources
        self.launched += 1
        if executor_id_of(info):
            self.run_in_executor(fw, agent, task, info, container_id, effects)
        else:
            effects.append(Launch(agent.id, fw.id, tid, info, container_id))

    def task_status(self, agent_id: str, framework_id: str, task_id: str, st: dict[str, Any], now: float) -> list:
        """An agent reports a status (with uuid) for one of its tasks."""
        effects: list = []
        fw = self.frameworks.get(framework_id)
        task = fw.tasks.get(task_id) if fw else None
        agent = self.agents.get(agent_id)
        if task is None or task.agent_id != agent_id or agent is None or not agent.connected or task.terminal:
            return effects
        if st.get("uuid") and any(s.get("uuid") == st["uuid"] for s in task.statuses):
            return effects  # sent again (an executor's re-subscription): the agent has it already
        task.state = st["state"]
        task.statuses.append(st)
        if task.terminal:
            agent.used = agent.used - task.resources
            self.needs_allocation = True
            self._check_drained(agent)
        task.pending.append(st)
        if len(task.pending) == 1:
            task.retry_s = self.update_retry_s
            self._forward(fw, task, now, effects)
        return effects

    def _forward(self, fw: RegisteredFramework, task: Task, now: float, effects: list) -> None:
        self._send(fw, P.update_event(task.pending[0]), effects)
        task.retry_gen += 1
        self._timer(now + task.retry_s, "retry", (fw.id, task.id), task.retry_gen)

    def _retry(self, key: tuple[str, str], gen: int, now: float, effects: list) -> None:
        fw = self.frameworks.get(key[0])
        task = fw.tasks.get(key[1]) if fw else None
        if task is None or task.retry_gen != gen or not task.pending or not self.agents[task.agent_id].connected:
            return  # acknowledged meanwhile, or the agent (whose status update manager retries) is dead
        task.retry_s = min(task.retry_s * 2, MAX_RETRY_SECONDS)
        self._forward(fw, task, now, effects)

    def acknowledge(self, fw: RegisteredFramework, agent_id: str, task_id: str, uuid: str, now: float) -> list:
        effects: list = []
        task = fw.tasks.get(task_id)
        if task is None or not task.pending or task.pending[0].get("uuid") != uuid or task.agent_id != agent_id:
            log.debug("ignoring acknowledgement of %s/%s (%s)", fw.id, task_id, uuid)
            return effects
        acked = task.pending.popleft()
        task.retry_gen += 1
        self.acknowledged_in_executor(task, acked, effects)
        if task.pending:
            task.retry_s = self.update_retry_s
            self._forward(fw, task, now, effects)
        elif P.is_terminal(acked["state"]) and task.terminal:
            del fw.tasks[task_id]
            self._complete(fw, task)
            agent = self.agents.get(task.agent_id)
            if agent is not None:
                agent.tasks.discard((fw.id, task_id))
        return effects

    def _complete(self, fw: RegisteredFramework, task: Task) -> None:
        fw.completed[task.id] = task
        fw.completed.move_to_end(task.id)
        while len(fw.completed) > MAX_COMPLETED_TASKS:
            fw.completed.popitem(last=False)

    def kill(self, fw: RegisteredFramework, task_id: str, agent_id: str | None, now: float,
             kill_policy: dict[str, Any] | None = None) -> list:
        """KILL: SIGTERM, then SIGKILL after the call's, else the task's, else the default grace period.
        An unknown task is answered as an explicit reconciliation would be (as Mesos does)."""
        task = fw.tasks.get(task_id)
        if task is None:
            return self.reconcile(fw, [(task_id, agent_id)], now)
        agent = self.agents[task.agent_id]
        if task.terminal or not agent.connected:
            return []
        grace = grace_period(kill_policy)
        if task.executor_id:
            return [self.kill_in_executor(task, grace)]
        if grace is None:
            grace = task.kill_grace_s if task.kill_grace_s is not None else self.kill_grace_s
        return [Kill(agent.id, fw.id, task_id, grace_s=grace,
                     killing_state=P.TASK_KILLING_STATE in fw.capabilities)]

    def reconcile(self, fw: RegisteredFramework, wanted: list[tuple[str, str | None]], now: float) -> list:
        """Explicit (wanted non-empty) or implicit reconciliation, with the rules of the transcripts."""
        effects: list = []
        if not wanted:
            for task in fw.tasks.values():
                self._send(fw, P.update_event(self._latest(task, now)), effects)
            return effects
        pa = fw.partition_aware
        for task_id, agent_id in wanted:
            task = fw.tasks.get(task_id)
            if task is not None:
                st = self._latest(task, now)
            elif agent_id is not None and agent_id in self.agents and not self.agents[agent_id].removed:
                st = P.status(task_id, "TASK_GONE" if pa else "TASK_LOST", timestamp=now,
                              message="Reconciliation: Task is unknown to the agent", source="SOURCE_MASTER",
                              reason="REASON_RECONCILIATION", agent_id=agent_id)
            elif agent_id is not None and agent_id in self.agents:
                st = P.status(task_id, "TASK_UNREACHABLE" if pa else "TASK_LOST", timestamp=now,
                              message="Reconciliation: Task is unreachable", source="SOURCE_MASTER",
                              reason="REASON_RECONCILIATION", agent_id=agent_id,
                              unreachable_time=self.agents[agent_id].unreachable_time)
            else:
                st = P.status(task_id, "TASK_UNKNOWN" if pa else "TASK_LOST", timestamp=now,
                              message="Reconciliation: Task is unknown", source="SOURCE_MASTER",
                              reason="REASON_RECONCILIATION", agent_id=agent_id)
            self._send(fw, P.update_event(st), effects)
        return effects

    def _latest(self, task: Task, now: float) -> dict[str, Any]:
        last = next((s for s in reversed(task.statuses) if "container_status" in s), None)
        return P.status(task.id, task.state, timestamp=now, message="Reconciliation: Latest task state",
                        source="SOURCE_MASTER", reason="REASON_RECONCILIATION", agent_id=task.agent_id,
                        container=last["container_status"] if last else None)

    def master_update(self, fw: RegisteredFramework, task_id: str, state: str, reason: str, message: str,
                      agent_id: str | None, now: float, effects: list) -> None:
        """A status the master itself generates (no uuid, nothing to acknowledge)."""
        st = P.status(task_id, state, timestamp=now, message=message, source="SOURCE_MASTER", reason=reason,
                      agent_id=agent_id)
        self._send(fw, P.update_event(st), effects)


def grace_period(kill_policy: Any) -> float | None:
    """KillPolicy.grace_period (a DurationInfo: nanoseconds) in seconds, if given."""
    if not isinstance(kill_policy, dict) or not isinstance(kill_policy.get("grace_period"), dict):
        return None
    try:
        return max(0.0, float(kill_policy["grace_period"].get("nanoseconds", 0)) / 1e9)
    except (TypeError, ValueError):
        return None
