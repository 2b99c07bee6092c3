"""The master's frameworks (a mixin of MasterState, no I/O): SUBSCRIBE and its failover and
re-registration rules, the checks before every other call, disconnection and the failover timeout,
TEARDOWN and removal.

A removed framework is kept among the completed ones (the last MAX_COMPLETED_FRAMEWORKS, for the
operator API) and its id is refused on SUBSCRIBE for the rest of the master's lifetime.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from plastic.local import protocol as P
from plastic.local.effects import EndStream, Kill, Send
from plastic.local.model import Agent, MasterOffer, RegisteredFramework, Task

log = logging.getLogger(__name__)

MAX_COMPLETED_FRAMEWORKS = 50


class FrameworkBook:
    """The framework half of MasterState (a mixin over its frameworks, streams, agents and offers)."""

    master_id: str
    host: str
    port: int
    heartbeat_s: float
    kill_grace_s: float
    agents: dict[str, Agent]
    frameworks: dict[str, RegisteredFramework]
    completed_frameworks: OrderedDict[str, RegisteredFramework]
    removed_framework_ids: set[str]
    offers: dict[str, MasterOffer]
    streams: dict[str, str]
    needs_allocation: bool
    _next_framework: int
    _timer: Callable[..., None]
    remove_offer: Callable[[MasterOffer], None]
    shutdown_executors: Callable[[str, list], None]
    _complete: Callable[[RegisteredFramework, Task], None]
    _check_drained: Callable[[Agent], None]

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
