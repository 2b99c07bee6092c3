"""The master's agents (a mixin of MasterState, no I/O): registration, loss and removal, draining,
deactivation, spot interruptions.

An agent that dies (agent_lost) loses its offers at once; its tasks are only reported unreachable when
the ping timeout passes (the state's "agent_remove" timer), as on a Mesos 1.11 master.  A spot
interruption is a notice time on the agent (its IMDS shows it); the state's "interrupt" timer kills
the agent when it passes.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from plastic.local import protocol as P
from plastic.local.config import AgentSpec
from plastic.local.effects import Kill, ToExecutor
from plastic.local.model import Agent, MasterOffer, RegisteredFramework, Task
from plastic.local.resources import ResourceBag


class AgentBook:
    """The agent half of MasterState (a mixin over its agents, frameworks, offers and timers)."""

    master_id: str
    agents: dict[str, Agent]
    next_index: int
    frameworks: dict[str, RegisteredFramework]
    offers: dict[str, MasterOffer]
    needs_allocation: bool
    agent_ping_timeout_s: float
    interrupt_rate_per_min: float | None
    kill_grace_s: float
    rng: random.Random
    _timer: Callable[..., None]
    _send: Callable[..., None]
    _rescind: Callable[[MasterOffer, list], None]
    _complete: Callable[[RegisteredFramework, Task], None]
    kill_in_executor: Callable[[Task, float | None], ToExecutor]

    def reserve_agent_id(self) -> str:
        """The id the next agent will register under (an agent created now that boots later keeps it)."""
        index = self.next_index
        self.next_index += 1
        return f"{self.master_id}-S{index}"

    def add_agent(self, spec: AgentSpec, *, port: int, now: float, agent_id: str | None = None) -> str:
        agent_id = agent_id or self.reserve_agent_id()
        index = int(agent_id.rsplit("-S", 1)[1])
        scalars = ResourceBag.of(cpus=spec.cpus, mem=spec.ram_mib, disk=spec.disk_mib)
        total = ResourceBag(scalars.scalars, {"ports": [spec.ports]} if spec.ports else None)
        self.agents[agent_id] = Agent(agent_id, index, spec, port, total, now)
        if spec.preemptible and self.interrupt_rate_per_min:
            self._timer(now + self.rng.expovariate(self.interrupt_rate_per_min / 60.0), "auto_interrupt", agent_id)
        self.needs_allocation = True
        return agent_id

    def agent(self, agent_id: str) -> Agent:
        agent = self.agents.get(agent_id)
        if agent is None or agent.removed:
            raise P.CallError(400, f"Agent {agent_id} is not registered")
        return agent

    def agent_lost(self, agent_id: str, now: float, cause: str = "killed") -> list:
        """The agent died (its processes are gone). Offers go at once; tasks only after the ping timeout."""
        effects: list = []
        agent = self.agents.get(agent_id)
        if agent is None or not agent.connected:
            return effects
        agent.connected = False
        agent.died_at = now
        agent.death_cause = cause
        for oid in list(agent.offers):
            self._rescind(self.offers[oid], effects)
        self._timer(now + self.agent_ping_timeout_s, "agent_remove", agent_id)
        return effects

    def _remove_agent(self, agent_id: str, now: float, effects: list) -> None:
        agent = self.agents.get(agent_id)
        if agent is None or agent.removed:
            return
        agent.removed = True
        agent.unreachable_time = now
        for fid, tid in sorted(agent.tasks):
            fw = self.frameworks.get(fid)
            task = fw.tasks.pop(tid, None) if fw else None
            if task is None:
                continue
            task.pending.clear()
            task.retry_gen += 1
            if task.terminal:
                self._complete(fw, task)
                continue
            task.state = "TASK_UNREACHABLE"
            task.unreachable_time = now
            st = P.status(tid, "TASK_UNREACHABLE" if fw.partition_aware else "TASK_LOST", timestamp=now,
                          message="health check timed out", source="SOURCE_MASTER", reason="REASON_AGENT_REMOVED",
                          agent_id=agent_id, unreachable_time=now)
            task.statuses.append(st)
            fw.unreachable[tid] = task
            self._send(fw, P.update_event(st), effects)
        agent.tasks.clear()
        agent.executors.clear()
        agent.used = ResourceBag()
        for fw in self.frameworks.values():
            self._send(fw, P.failure_event(agent_id), effects)

    def drain_agent(self, agent_id: str, grace_s: float | None, mark_gone: bool, now: float) -> list:
        agent = self.agent(agent_id)
        effects: list = []
        agent.deactivated = True
        agent.drain = {"state": "DRAINING", "grace_s": grace_s, "mark_gone": mark_gone, "since": now}
        for oid in list(agent.offers):
            self._rescind(self.offers[oid], effects)
        grace = self.kill_grace_s if grace_s is None else grace_s
        for fid, tid in sorted(agent.tasks):
            fw = self.frameworks[fid]
            task = fw.tasks[tid]
            if not task.terminal and agent.connected and task.executor_id:
                effects.append(self.kill_in_executor(task, grace))
            elif not task.terminal and agent.connected:
                effects.append(Kill(agent_id, fid, tid, reason="REASON_AGENT_DRAINING", grace_s=grace,
                                    killing_state=P.TASK_KILLING_STATE in fw.capabilities))
        self._check_drained(agent)
        return effects

    def _check_drained(self, agent: Agent) -> None:
        if agent.drain and agent.drain["state"] == "DRAINING" and \
                all(self.frameworks[f].tasks[t].terminal for f, t in agent.tasks):
            agent.drain["state"] = "DRAINED"

    def deactivate_agent(self, agent_id: str, now: float) -> list:
        agent = self.agent(agent_id)
        agent.deactivated = True
        effects: list = []
        for oid in list(agent.offers):
            self._rescind(self.offers[oid], effects)
        return effects

    def reactivate_agent(self, agent_id: str, now: float) -> list:
        agent = self.agent(agent_id)
        if not agent.deactivated:
            raise P.CallError(400, f"Agent {agent_id} is not deactivated")
        agent.deactivated = False
        agent.drain = None
        self.needs_allocation = True
        return []

    def interrupt(self, agent_id: str, notice_s: float, now: float, *, rebalance_only: bool = False) -> list:
        """Schedule a spot interruption: a rebalance recommendation now and, unless rebalance_only,
        an instance-action notice; the agent dies when the notice time passes."""
        agent = self.agent(agent_id)
        if not agent.spec.preemptible:
            raise P.CallError(400, f"Agent {agent_id} is not preemptible")
        if not agent.connected:
            raise P.CallError(400, f"Agent {agent_id} is already gone")
        if agent.rebalance_time is None:
            agent.rebalance_time = now
        if not rebalance_only:
            agent.interrupt_gen += 1
            agent.notice_time = now + max(0.0, notice_s)
            self._timer(agent.notice_time, "interrupt", agent_id, agent.interrupt_gen)
        return []
