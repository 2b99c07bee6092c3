"""The local master's bookkeeping as a state machine: stimuli in, effects out, no I/O.

Every public method takes `now` (wall-clock seconds) and returns a list of
effects (plastic.local.effects) for the runtime to carry out: events to write
on subscription streams, tasks to launch or kill, agents to kill.  Time-based
behaviour (status-update retries, decline filters, failover timeouts, agent
ping timeouts, spot interruptions) lives in one timer heap: the runtime asks
`next_deadline()` and calls `advance(now)` when it passes.  This makes the
whole master testable without sockets, processes or sleeping.

The model follows Mesos 1.11 as recorded in tests/data/mesos-1.11-transcripts:
the master's view of a task is the latest state its agent reported (so
resources come back at once), while the updates themselves reach the framework
one at a time per task, each re-sent until acknowledged.
"""

from __future__ import annotations

import logging
import random
import uuid as uuid_mod
from collections import OrderedDict
from typing import Any

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from plastic.local.agent_book import AgentBook
from plastic.local.allocator import OfferBook
from plastic.local.effects import KillAgent
from plastic.local.executors import ExecutorRegistry
from plastic.local.framework_book import FrameworkBook
from plastic.local.model import Agent, Filter, MasterOffer, RegisteredFramework, Task
from plastic.local.resources import ResourceBag
from plastic.local.task_book import TaskBook
from plastic.local.timers import TimerHeap

log = logging.getLogger(__name__)

DEFAULT_REFUSE_SECONDS = 5.0

__all__ = ["Agent", "Filter", "MasterOffer", "MasterState", "RegisteredFramework", "Task"]


class MasterState(AgentBook, FrameworkBook, TaskBook, ExecutorRegistry, OfferBook):
    """All of the master: frameworks (FrameworkBook), agents (AgentBook), tasks and their updates
    (TaskBook), executors (ExecutorRegistry), offers (OfferBook), and the timers that drive them."""

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
        self._timers = TimerHeap()
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
        self._timers.add(when, kind, key, gen)

    def next_deadline(self) -> float | None:
        return self._timers.next_deadline()

    def advance(self, now: float) -> list:
        """Fire every timer due at `now`."""
        effects: list = []
        for kind, key, gen in self._timers.pop_due(now):
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

