"""The local master's bookkeeping as a state machine: stimuli in, effects out, no I/O.

Every public method takes `now` (wall-clock seconds) and returns a list of
effects (plastic.local.effects) for the runtime to carry out: events to write
on subscription streams, tasks to launch or kill, agents to kill.  Time-based
behaviour (status-update retries, decline filters, failover timeouts, agent
ping timeouts, spot interruptions) lives in one timer heap: the runtime asks
`next_deadline()` and calls `advance(now)` when it passes.  This makes the
whole master testable without sockets, processes or sleeping.

The model follows Mesos 1.11 as recorded in ../shared/mesos-1.11-transcripts:
the master's view of a task is the latest state its agent reported (so
resources come back at once), while the updates themselves reach the framework
one at a time per task, each re-sent until acknowledged.
"""

from __future__ import annotations

import heapq
import logging
import random
import uuid as uuid_mod
from collections import OrderedDict
from typing import Any

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from plastic.local import protocol as P
from plastic.local.allocator import OfferBook
from plastic.local.config import AgentSpec
from plastic.local.effects import EndStream, Kill, KillAgent, Launch, Send
from plastic.local.executors import ExecutorRegistry, executor_id_of
from plastic.local.model import Agent, Filter, MasterOffer, RegisteredFramework, Task
from plastic.local.resources import ResourceBag

log = logging.getLogger(__name__)

DEFAULT_REFUSE_SECONDS = 5.0
MAX_COMPLETED_TASKS = 1000
MAX_COMPLETED_FRAMEWORKS = 50
MAX_RETRY_SECONDS = 600.0

__all__ = ["Agent", "Filter", "MasterOffer", "MasterState", "RegisteredFramework", "Task"]


class MasterState(ExecutorRegistry, OfferBook):
    """All of the master: frameworks, agents, offers, tasks, timers."""

    def __init__(self, *, master_id: str, host: str = "127.0.0.1", port: int = 5050, heartbeat_s: float = 15.0,
                 agent_ping_timeout_s: float = 15.0, update_retry_s: float = 10.0,
                 interrupt_rate_per_min: float | None = None, interrupt_notice_s: float = INTERRUPTION_NOTICE_S,
                 kill_grace_s: float = 3.0, rng: random.Random | None = None, now: float = 0.0):
        self.master_id = master_id
        self.host = host
        self.port = port
        self.heartbeat_s = heartbeat_s
        self.agent_ping_timeout_s = agent_ping_timeout_s
        self.update_retry_s = update_retry_s
        self.interrupt_rate_per_min = interrupt_rate_per_min
        self.interrupt_notice_s = interrupt_notice_s
        self.kill_grace_s = kill_grace_s
        self.rng = rng or random.Random()
        self.started = now
        self.agents: dict[str, Agent] = {}
        self.next_index = 0  # of the next agent id (ids are never reused)
        self.frameworks: dict[str, RegisteredFramework] = {}
        self.completed_frameworks: OrderedDict[str, RegisteredFramework] = OrderedDict()
        # Every framework id this master removed (TEARDOWN, failover timeout): refused on SUBSCRIBE for the
        # rest of this master's lifetime.  Unlike completed_frameworks (bounded, for the operator API) this
        # keeps only ids, so a removed framework can never come back through the re-registration rule.
        self.removed_framework_ids: set[str] = set()
        self.offers: dict[str, MasterOffer] = {}
        self.streams: dict[str, str] = {}  # stream id -> framework id (open streams only)
        self.needs_allocation = False
        self._timers: list[tuple[float, int, str, Any, int]] = []
        self._seq = 0
        self._next_offer = 0
        self._next_framework = 0
        self.launched = 0

    def new_uuid(self) -> str:
        """A random UUID string from the state's generator (seeded in tests)."""
        return str(uuid_mod.UUID(int=self.rng.getrandbits(128), version=4))

    # ================================================================ ids and timers
    def _offer_id(self) -> str:
        oid = f"{self.master_id}-O{self._next_offer}"
        self._next_offer += 1
        return oid

    def _timer(self, when: float, kind: str, key: Any = None, gen: int = 0) -> None:
        self._seq += 1
        heapq.heappush(self._timers, (when, self._seq, kind, key, gen))

    def next_deadline(self) -> float | None:
        return self._timers[0][0] if self._timers else None

    def advance(self, now: float) -> list:
        """Fire every timer due at `now`."""
        effects: list = []
        while self._timers and self._timers[0][0] <= now:
            _, _, kind, key, gen = heapq.heappop(self._timers)
            if kind == "retry":
                self._retry(key, gen, now, effects)
            elif kind == "filter":
                self.needs_allocation = True
            elif kind == "failover":
                fw = self.frameworks.get(key)
                if fw is not None and not fw.connected and fw.failover_gen == gen:
                    log.info("framework %s did not fail over in %.1fs: removing it", key, fw.failover_timeout)
                    self._remove_framework(fw, now, effects)
            elif kind == "agent_remove":
                self._remove_agent(key, now, effects)
            elif kind == "interrupt":
                agent = self.agents.get(key)
                if agent is not None and agent.connected and agent.interrupt_gen == gen:
                    effects.append(KillAgent(agent.id, "spot interruption"))
            elif kind == "auto_interrupt":
                agent = self.agents.get(key)
                if agent is not None and agent.connected and agent.notice_time is None:
                    effects.extend(self.interrupt(agent.id, self.interrupt_notice_s, now))
        return effects

    # ================================================================ agents
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

    # ================================================================ frameworks
    def subscribe(self, framework_info: dict[str, Any], stream_id: str, now: float) -> tuple[str, list]:
        """SUBSCRIBE, with the rules of a Mesos 1.11 master for `framework_info.id`:

        * no id: a new framework, with an id this master has never given out;
        * the id of a framework this master holds (connected or not): a failover to it (the previous
          stream, if open, gets ERROR "Framework failed over" and ends);
        * the id of a framework this master removed (TEARDOWN, failover timeout expired): refused with
          ERROR "Framework has been removed" on the stream, which then ends;
        * any other id: a re-registration after a master failover.  A new master knows nothing of the
          frameworks of the previous one (in-memory registry), so, like Mesos, it adopts the framework
          with that same id and answers SUBSCRIBED; its old tasks are unknown here (explicit
          reconciliation answers TASK_UNKNOWN, or TASK_LOST without PARTITION_AWARE).

        A call other than SUBSCRIBE naming an unknown framework stays a 400 "Framework cannot be found"
        (check_call): only SUBSCRIBE can bring a framework to a master.
        """
        effects: list = []
        fid = (framework_info.get("id") or {}).get("value")
        if fid and fid in self.removed_framework_ids:
            self.streams[stream_id] = fid
            effects += [Send(stream_id, P.error_event("Framework has been removed")), EndStream(stream_id)]
            del self.streams[stream_id]
            return fid, effects
        fw = self.frameworks.get(fid) if fid else None
        if fw is None:
            if not fid:
                fid = self._new_framework_id()
            else:
                log.info("framework %s is unknown to this master: re-registration after a master failover", fid)
            info = dict(framework_info, id=P.value(fid))
            fw = RegisteredFramework(fid, info, registered_time=now, reregistered_time=now)
            self.frameworks[fid] = fw
        else:
            if fw.connected and fw.stream_id:
                effects += [Send(fw.stream_id, P.error_event("Framework failed over")), EndStream(fw.stream_id)]
                self.streams.pop(fw.stream_id, None)
            fw.info = dict(framework_info, id=P.value(fid))
            fw.reregistered_time = now
            fw.failover_gen += 1
            for oid in list(fw.offers):
                self.remove_offer(self.offers[oid])
        fw.stream_id = stream_id
        fw.connected = True
        self.streams[stream_id] = fid
        effects.append(Send(stream_id, P.subscribed_event(fid, self.heartbeat_s,
                                                          P.master_info(self.master_id, self.host, self.port))))
        effects.append(Send(stream_id, P.heartbeat_event()))
        for task in fw.tasks.values():
            if task.pending and self.agents[task.agent_id].connected:
                effects.append(Send(stream_id, P.update_event(task.pending[0])))
        self.needs_allocation = True
        return fid, effects

    def _new_framework_id(self) -> str:
        """`<master id>-NNNN`, skipping ids already taken (a re-registered framework may carry any id)."""
        while True:
            fid = f"{self.master_id}-{self._next_framework:04d}"
            self._next_framework += 1
            if fid not in self.frameworks and fid not in self.removed_framework_ids:
                return fid

    def disconnected(self, stream_id: str, now: float) -> list:
        """A subscription stream closed (the client went away)."""
        fid = self.streams.pop(stream_id, None)
        fw = self.frameworks.get(fid) if fid else None
        effects: list = []
        if fw is None or fw.stream_id != stream_id or not fw.connected:
            return effects
        fw.connected = False
        for oid in list(fw.offers):
            self.remove_offer(self.offers[oid])
        fw.failover_gen += 1
        self._timer(now + fw.failover_timeout, "failover", fid, fw.failover_gen)
        return effects

    def check_call(self, framework_id: str, stream_id: str | None) -> RegisteredFramework:
        """The checks a real master makes before any non-SUBSCRIBE call, in its order."""
        fw = self.frameworks.get(framework_id)
        if fw is None:
            raise P.CallError(400, "Framework cannot be found")
        if not fw.connected:
            raise P.CallError(403, "Framework is not subscribed")
        if stream_id is None:
            raise P.CallError(400, "All non-subscribe calls should include the 'Mesos-Stream-Id' header")
        if stream_id != fw.stream_id:
            raise P.CallError(400, f"The stream ID '{stream_id}' included in this request didn't match the stream ID "
                                   f"currently associated with framework ID {framework_id}")
        return fw

    def teardown(self, fw: RegisteredFramework, now: float) -> list:
        effects: list = []
        if fw.connected and fw.stream_id:
            effects.append(EndStream(fw.stream_id))
            self.streams.pop(fw.stream_id, None)
        self._remove_framework(fw, now, effects)
        return effects

    def _remove_framework(self, fw: RegisteredFramework, now: float, effects: list) -> None:
        fw.connected = False
        self.shutdown_executors(fw.id, effects)
        for oid in list(fw.offers):
            self.remove_offer(self.offers[oid])
        for task in list(fw.tasks.values()):
            agent = self.agents[task.agent_id]
            if not task.terminal:
                if agent.connected and not task.executor_id:  # (an executor's tasks end with its SHUTDOWN)
                    effects.append(Kill(agent.id, fw.id, task.id, silent=True, grace_s=self.kill_grace_s))
                agent.used = agent.used - task.resources
                task.state = "TASK_KILLED"
            task.pending.clear()
            task.retry_gen += 1
            agent.tasks.discard((fw.id, task.id))
            self._complete(fw, task)
            self._check_drained(agent)
        fw.tasks.clear()
        for task in fw.unreachable.values():
            fw.completed[task.id] = task
        fw.unreachable.clear()
        fw.unregistered_time = now
        del self.frameworks[fw.id]
        self.removed_framework_ids.add(fw.id)
        self.completed_frameworks[fw.id] = fw
        while len(self.completed_frameworks) > MAX_COMPLETED_FRAMEWORKS:
            self.completed_frameworks.popitem(last=False)
        self.needs_allocation = True

    def update_framework(self, fw: RegisteredFramework, info: dict[str, Any]) -> list:
        fw.info = dict(info, id=P.value(fw.id))
        self.needs_allocation = True
        return []
    # ================================================================ tasks
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

    # ================================================================ invariants (for tests)
    def validate(self) -> None:
        """Check the bookkeeping's invariants; raises AssertionError on the first broken one."""
        for agent in self.agents.values():
            used = ResourceBag()
            for fid, tid in agent.tasks:
                task = self.frameworks[fid].tasks[tid]
                assert task.agent_id == agent.id, (fid, tid)
                if not task.terminal:
                    used = used + task.resources
            for record in agent.executors.values():
                used = used + record.resources
            if not agent.removed:
                assert used == agent.used, (agent.id, used, agent.used)
            offered = ResourceBag()
            for oid in agent.offers:
                offered = offered + self.offers[oid].resources
            assert offered == agent.offered, (agent.id, offered, agent.offered)
            assert agent.total.contains(agent.used + agent.offered), agent.id
            if not agent.offerable:
                assert not agent.offers, agent.id
        for offer in self.offers.values():
            fw = self.frameworks[offer.framework_id]
            assert fw.connected and offer.id in fw.offers, offer.id
        for fw in self.frameworks.values():
            for task in fw.tasks.values():
                assert (fw.id, task.id) in self.agents[task.agent_id].tasks, task.id
            assert fw.connected == (fw.stream_id in self.streams), fw.id


def grace_period(kill_policy: Any) -> float | None:
    """KillPolicy.grace_period (a DurationInfo: nanoseconds) in seconds, if given."""
    if not isinstance(kill_policy, dict) or not isinstance(kill_policy.get("grace_period"), dict):
        return None
    try:
        return max(0.0, float(kill_policy["grace_period"].get("nanoseconds", 0)) / 1e9)
    except (TypeError, ValueError):
        return None
