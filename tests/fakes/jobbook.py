"""A JobBook harness: the book, its clock, and helpers that check validate() after every event; the
agents the JobBook scenarios place work on."""

from __future__ import annotations

import itertools

from plastic.core.book.commands import LaunchTasks
from plastic.core.book.events import JobIssued, OffersReceived, RuntimeHistoryLoaded, StatusReceived
from plastic.core.book.jobbook import JobBook
from plastic.core.book.placement import AgentInfo, Offer
from plastic.core.model import PREEMPTIBLE, Resources
from tests.fakes.records import of

CORE = AgentInfo("core", Resources(4, 8192), preemptible=False, cluster="core", instance_type="m5.xlarge")
BURST = AgentInfo("burst", Resources(4, 8192), preemptible=True, cluster="burst", instance_type="c5.xlarge")
BURST2 = AgentInfo("burst2", Resources(4, 8192), preemptible=True, cluster="burst", instance_type="c5.xlarge")
SMALL = Resources(1, 1024)

_oids = itertools.count()
_uuids = itertools.count()


def _whole_offer(agent: AgentInfo) -> Offer:
    return Offer(f"o{next(_oids)}", agent, agent.capacity)


class Harness:
    """A book, a clock, and helpers that check validate() after every event."""

    def __init__(self, estimates=None, **kw):
        self.book = JobBook(**kw)
        self.now = 0.0
        for tool, seconds in (estimates or {}).items():  # the history the shell would load
            self.book.handle(RuntimeHistoryLoaded(tool, (seconds,)), self.now)

    def __call__(self, event, dt: float = 1.0):
        self.now += dt
        decided = self.book.handle(event, self.now)
        self.book.validate()
        return [*decided.records, *decided.commands]  # what the book decided: its records, then its commands

    def issue(self, jid="j", preempt=PREEMPTIBLE, demand=SMALL, tool="t", **kw):
        return self(JobIssued(jid, demand, preempt, tool=tool, **kw))

    def offer(self, *agents):
        return self(OffersReceived(tuple(_whole_offer(a) for a in agents)))

    def status(self, task, state, **kw):
        kw.setdefault("uuid", f"u{next(_uuids)}")
        agent = kw.pop("agent_id", None)
        return self(StatusReceived(task, state, agent_id=agent, **kw))

    def launched(self, cmds):
        return [(t.mesos_task_id, t.agent_id) for lt in of(cmds, LaunchTasks) for t in lt.tasks]

    def run(self, jid="j", agent=CORE, **kw):
        """Issue, place on `agent`, and report it RUNNING; returns the Mesos task id."""
        self.issue(jid, **kw)
        (task, where), = self.launched(self.offer(agent))
        assert where == agent.agent_id
        self.status(task, "TASK_STARTING", agent_id=where)
        self.status(task, "TASK_RUNNING", agent_id=where)
        return task
