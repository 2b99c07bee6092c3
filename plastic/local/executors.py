"""The master's and agents' bookkeeping of custom executors (a mixin of MasterState, no I/O).

As on Mesos 1.11: a task whose TaskInfo names an ExecutorInfo runs in that executor, one per
(framework, executor id) on an agent.  The first such task starts it (its resources are used from
then on, beside the task's), later tasks with the same id go to the running one (their ExecutorInfo
must be the same), offers list the framework's executors on the agent (``executor_ids``), and when
the executor's process ends, every task it had not ended is TASK_FAILED (REASON_EXECUTOR_TERMINATED,
from the agent) and the framework gets a FAILURE naming the executor.  The agent's side of the
executor API (SUBSCRIBE, UPDATE, the events it sends) is plastic.local.executor_host.
"""

from __future__ import annotations

import base64
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from plastic.local import protocol as P
from plastic.local.effects import LaunchExecutor, ToExecutor
from plastic.local.model import Agent, RegisteredFramework, Task
from plastic.local.resources import ResourceBag, ResourceFormatError

log = logging.getLogger(__name__)


@dataclass
class ExecutorRecord:
    framework_id: str
    executor_id: str
    agent_id: str
    info: dict[str, Any]
    resources: ResourceBag
    container_id: str
    tasks: set[str] = field(default_factory=set)


def executor_id_of(info: Mapping[str, Any]) -> str | None:
    ex = info.get("executor")
    if not isinstance(ex, Mapping):
        return None
    return (ex.get("executor_id") or {}).get("value") or None


def check_executor(info: Mapping[str, Any], existing: ExecutorRecord | None,
                   new_here: Mapping[str, dict[str, Any]]) -> tuple[ResourceBag, str | None]:
    """(resources the task's executor adds: none when it runs already, error) for a task with an executor."""
    ex = info["executor"]
    ex_id = executor_id_of(info)
    if not ex_id:
        return ResourceBag(), "Task's executor has no 'executor_id'"
    command = ex.get("command")
    if not isinstance(command, Mapping) or not isinstance(command.get("value"), str):
        return ResourceBag(), f"Executor '{ex_id}' has no command"
    earlier = existing.info if existing is not None else new_here.get(ex_id)
    if earlier is not None:
        if _comparable(earlier) != _comparable(ex):
            return ResourceBag(), f"ExecutorInfo is not compatible with that of the running executor '{ex_id}'"
        return ResourceBag(), None
    try:
        return ResourceBag.from_json(ex.get("resources") or []), None
    except ResourceFormatError as exc:
        return ResourceBag(), f"Executor '{ex_id}' uses invalid resources: {exc}"


def _comparable(ex: Mapping[str, Any]) -> tuple:
    return (repr(ex.get("command")), repr(ex.get("resources")), ex.get("type"))


class ExecutorRegistry:
    """The executor half of MasterState (a mixin over its agents and frameworks)."""

    agents: dict[str, Agent]
    frameworks: dict[str, RegisteredFramework]
    needs_allocation: bool
    rng: random.Random
    task_status: Callable[..., list]
    _send: Callable[..., None]

    def new_uuid_b64(self) -> str:
        """A status update's uuid (16 bytes, base64 as JSON carries bytes), from the state's generator."""
        return base64.b64encode(self.rng.getrandbits(128).to_bytes(16, "big")).decode("ascii")

    def executor_for(self, agent: Agent, framework_id: str, info: Mapping[str, Any]) -> ExecutorRecord | None:
        ex_id = executor_id_of(info)
        return agent.executors.get((framework_id, ex_id)) if ex_id else None

    def run_in_executor(self, fw: RegisteredFramework, agent: Agent, task: Task, info: dict[str, Any],
                        container_id: str, effects: list) -> None:
        """Give a launched task to its executor, starting the executor first if it does not run."""
        ex_id = executor_id_of(info)
        assert ex_id is not None
        record = agent.executors.get((fw.id, ex_id))
        if record is None:
            ex_info = dict(info["executor"], framework_id=P.value(fw.id))
            record = ExecutorRecord(fw.id, ex_id, agent.id, ex_info,
                                    ResourceBag.from_json(ex_info.get("resources") or []), container_id)
            agent.executors[(fw.id, ex_id)] = record
            agent.used = agent.used + record.resources
            effects.append(LaunchExecutor(agent.id, fw.id, ex_id, ex_info, container_id, dict(fw.info)))
        record.tasks.add(task.id)
        task.executor_id = ex_id
        effects.append(ToExecutor(agent.id, fw.id, ex_id, {"type": "LAUNCH", "launch": {"task": info}}))

    def executor_exited(self, agent_id: str, framework_id: str, executor_id: str, status: int | None,
                        now: float) -> list:
        """The executor's process ended: its unfinished tasks fail, its resources come back."""
        effects: list = []
        agent = self.agents.get(agent_id)
        record = agent.executors.pop((framework_id, executor_id), None) if agent is not None else None
        if record is None or agent is None:
            return effects
        agent.used = agent.used - record.resources
        self.needs_allocation = True
        fw = self.frameworks.get(framework_id)
        if fw is None or not agent.connected:
            return effects
        for tid in sorted(record.tasks):
            task = fw.tasks.get(tid)
            if task is None or task.terminal or task.agent_id != agent_id:
                continue
            st = P.status(tid, "TASK_FAILED", timestamp=now, message="Executor terminated", source="SOURCE_AGENT",
                          reason="REASON_EXECUTOR_TERMINATED", agent_id=agent_id, executor_id=executor_id,
                          uuid=self.new_uuid_b64())
            effects.extend(self.task_status(agent_id, framework_id, tid, st, now))
        self._send(fw, P.executor_failure_event(agent_id, executor_id, status), effects)
        return effects

    def kill_in_executor(self, task: Task, grace_s: float | None) -> ToExecutor:
        """KILL to the task's executor; the kill policy only when the call gave one (as a Mesos agent sends it:
        the executor falls back on the task's own, then on its default)."""
        kill: dict[str, Any] = {"task_id": P.value(task.id)}
        if grace_s is not None:
            kill["kill_policy"] = {"grace_period": P.ns(grace_s)}
        return ToExecutor(task.agent_id, task.framework_id, task.executor_id or "", {"type": "KILL", "kill": kill})

    def shutdown_executor(self, fw: RegisteredFramework, agent_id: str, executor_id: str) -> list:
        """SHUTDOWN from the framework: the executor kills its tasks and leaves (an unknown one: nothing)."""
        agent = self.agents.get(agent_id)
        if agent is None or not agent.connected or (fw.id, executor_id) not in agent.executors:
            return []
        return [ToExecutor(agent_id, fw.id, executor_id, {"type": "SHUTDOWN"})]

    def shutdown_executors(self, fw_id: str, effects: list) -> None:
        for agent in self.agents.values():
            for (f, ex_id) in list(agent.executors):
                if f == fw_id and agent.connected:
                    effects.append(ToExecutor(agent.id, f, ex_id, {"type": "SHUTDOWN"}))

    def acknowledged_in_executor(self, task: Task, acked: Mapping[str, Any], effects: list) -> None:
        """An acknowledged update the executor sent goes back to it as ACKNOWLEDGED."""
        if task.executor_id and acked.get("source") == "SOURCE_EXECUTOR":
            effects.append(ToExecutor(task.agent_id, task.framework_id, task.executor_id,
                                      {"type": "ACKNOWLEDGED",
                                       "acknowledged": {"task_id": P.value(task.id), "uuid": acked["uuid"]}}))
