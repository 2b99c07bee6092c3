"""The JobBook's rule-based state machine (hypothesis): random interleavings of events, checked after
every step.  Run by tests/core/book/test_jobbook_properties.py and, with the run's records in a real Redis
beside it, by tests/framework/test_book_redis_properties.py.

Whatever happens: at most one ReportJobEnd per job, never a reliable-only job on a preemptible
agent, never a launch onto an agent under a termination notice, every update with a uuid is
acknowledged after the book recorded it, and validate() holds after every step.
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from plastic.core.book.commands import Acknowledge, LaunchTasks, ReportJobEnd
from plastic.core.book.events import (
    AgentLost,
    AgentSeen,
    JobIssued,
    KillRequested,
    NoticeReceived,
    OfferRescinded,
    OffersReceived,
    Reconnected,
    RuntimeHistoryLoaded,
    StatusReceived,
    Tick,
)
from plastic.core.book.jobbook import JobBook
from plastic.core.book.placement import AgentInfo, Offer
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt, Resources

AGENTS = {a.agent_id: a for a in (
    AgentInfo("core1", Resources(4, 8192), preemptible=False, cluster="core"),
    AgentInfo("core2", Resources(8, 16384), preemptible=False, cluster="core"),
    AgentInfo("burst1", Resources(2, 4096), preemptible=True, cluster="burst"),
    AgentInfo("burst2", Resources(4, 8192), preemptible=True, cluster="burst"),
    AgentInfo("burst3", Resources(4, 8192), preemptible=True, cluster="burst"),
)}
JOBS = [f"j{i}" for i in range(5)]
STATES = ["TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_FINISHED", "TASK_FAILED",
          "TASK_ERROR", "TASK_KILLED", "TASK_LOST", "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR",
          "TASK_DROPPED", "TASK_UNKNOWN"]
REASONS = [None, "REASON_AGENT_DRAINING", "REASON_AGENT_REMOVED", "REASON_RECONCILIATION"]
PREEMPTS = [RELIABLE, PREEMPTIBLE, Preempt(1), Preempt(1), Preempt(2)]
DEMANDS = [Resources(1, 512), Resources(2, 2048), Resources(4, 8192), Resources(32, 1024)]
ESTIMATES = {"short": 20.0, "long": 5000.0}


class JobBookMachine(RuleBasedStateMachine):
    @initialize(may_grow=st.booleans(), rebalance=st.sampled_from(["ignore", "avoid-long", "drain"]))
    def start(self, may_grow, rebalance):
        self.book = JobBook(cluster_may_grow=may_grow, rebalance=rebalance, max_lost_relaunches=2)
        for tool, seconds in ESTIMATES.items():
            self.book.handle(RuntimeHistoryLoaded(tool, (seconds,)), 0.0)
        self.now = 0.0
        self.ended: dict[str, int] = {}
        self.noticed: set[str] = set()  # agents under a termination notice
        self.issued: set[str] = set()
        self.uuids: list[str] = []
        self.ids = itertools.count()

    def apply(self, event, dt=1.0):
        self.now += dt
        decided = self.book.handle(event, self.now)
        cmds = decided.commands
        for c in cmds:
            if isinstance(c, ReportJobEnd):
                assert c.job_id in self.issued
                self.ended[c.job_id] = self.ended.get(c.job_id, 0) + 1
                assert self.ended[c.job_id] == 1, f"two ReportJobEnd for {c.job_id}"
            if isinstance(c, LaunchTasks):
                agent = AGENTS[c.agent_id]
                assert c.agent_id not in self.noticed, f"launch onto draining {c.agent_id}"
                for t in c.tasks:
                    job = self.book.jobs[t.job_id]
                    assert t.mesos_task_id == f"{t.job_id}.{t.attempt}"
                    assert self.ended.get(t.job_id, 0) == 0
                    n = job.preempt.max_preemptions  # the rule, restated independently of PendingTask
                    if n is not None and job.preemptions >= n:
                        assert not agent.preemptible, f"reliable-only {t.job_id} on {c.agent_id}"
        if isinstance(event, StatusReceived):
            acks = [i for i, c in enumerate(cmds) if isinstance(c, Acknowledge)]
            if event.uuid:
                assert len(acks) == 1 and cmds[acks[0]].uuid == event.uuid
                assert all(not isinstance(c, ReportJobEnd) for c in cmds[acks[0]:])
            else:
                assert not acks
        self.book.validate()
        return decided

    @rule(jid=st.sampled_from(JOBS), preempt=st.sampled_from(PREEMPTS), demand=st.sampled_from(DEMANDS),
          tool=st.sampled_from([None, "short", "long"]))
    def issue(self, jid, preempt, demand, tool):
        if jid not in self.issued:
            self.issued.add(jid)
        self.apply(JobIssued(jid, demand, preempt, tool=tool))

    @rule(jid=st.sampled_from(JOBS))
    def kill(self, jid):
        self.apply(KillRequested(jid))

    @rule(agents=st.lists(st.sampled_from(sorted(AGENTS)), min_size=1, max_size=4, unique=True),
          partial=st.booleans())
    def offers(self, agents, partial):
        offers = tuple(Offer(f"o{next(self.ids)}", AGENTS[a],
                             Resources(AGENTS[a].capacity.vcpus // 2, AGENTS[a].capacity.ram_mib // 2)
                             if partial else AGENTS[a].capacity) for a in agents)
        self.apply(OffersReceived(offers))

    @rule(data=st.data(), delta=st.sampled_from([0, 0, 0, -1, 1]), state=st.sampled_from(STATES),
          reason=st.sampled_from(REASONS), uuid=st.sampled_from(["new", "new", "none", "repeat"]),
          message=st.sampled_from([None, "Command exited with status 3"]))
    def status(self, data, delta, state, reason, uuid, message):
        jid = data.draw(st.sampled_from(sorted(self.issued) or JOBS))
        job = self.book.jobs.get(jid)
        attempt = max((job.attempt if job else 1) + delta, 1)
        if uuid == "new" or (uuid == "repeat" and not self.uuids):
            u = f"u{next(self.ids)}"
            self.uuids.append(u)
        elif uuid == "repeat":
            u = self.uuids[-1]
        else:
            u = None
        agent = job.agent_id if job else None
        self.apply(StatusReceived(f"{jid}.{attempt}", state, reason, message, agent, u))

    @rule(data=st.data(), ending=st.sampled_from(STATES), reason=st.sampled_from(REASONS))
    def live_tasks_report(self, data, ending, reason):
        """Every live job's current attempt reports its next update: LAUNCHING -> TASK_STARTING,
        STARTING -> TASK_RUNNING, then any state (``ending``) for one of the running ones."""
        live = sorted((j for j in self.book.live()), key=lambda j: j.job_id)
        for job in live:
            nxt = {"LAUNCHING": "TASK_STARTING", "STARTING": "TASK_RUNNING"}.get(job.state.value)
            if nxt is not None:
                self.apply(StatusReceived(job.mesos_task_id, nxt, agent_id=job.agent_id, uuid=f"u{next(self.ids)}"))
        running = sorted(j.job_id for j in self.book.live() if j.state.value in ("RUNNING", "KILLING"))
        if running:
            job = self.book.jobs[data.draw(st.sampled_from(running))]
            self.apply(StatusReceived(job.mesos_task_id, ending, reason, agent_id=job.agent_id,
                                      uuid=f"u{next(self.ids)}"))

    @rule()
    def tasks_run(self):
        """Every launched task reports RUNNING (drives jobs into the states notices and losses act on)."""
        for job in list(self.book.jobs.values()):
            if job.state.value in ("LAUNCHING", "STARTING"):
                self.apply(StatusReceived(job.mesos_task_id, "TASK_RUNNING", agent_id=job.agent_id,
                                          uuid=f"u{next(self.ids)}"))

    @rule(agent=st.sampled_from(sorted(AGENTS)))
    def agent_seen(self, agent):
        self.apply(AgentSeen(AGENTS[agent]))

    @rule(agent=st.sampled_from(["burst1", "burst2", "burst3"]))
    def spot_churn(self, agent):
        """A burst agent is lost and a new one with the same id offers itself at once."""
        self.apply(AgentLost(agent))
        a = AGENTS[agent]
        self.apply(OffersReceived((Offer(f"o{next(self.ids)}", a, a.capacity),)))

    @rule(agent=st.sampled_from(sorted(AGENTS)))
    def agent_lost(self, agent):
        self.apply(AgentLost(agent))

    @rule(agent=st.sampled_from(sorted(AGENTS)), window=st.sampled_from([5.0, 60.0, 120.0]),
          kind=st.sampled_from(["terminate", "rebalance"]))
    def notice(self, agent, window, kind):
        if kind == "terminate":
            self.noticed.add(agent)
        self.apply(NoticeReceived(agent, self.now + window, kind))

    @rule()
    def reconnected(self):
        self.apply(Reconnected())

    @rule(dt=st.sampled_from([1.0, 30.0, 200.0]))
    def tick(self, dt):
        self.apply(Tick(), dt)

    @rule(offer=st.sampled_from(["o0", "o1"]))
    def rescind(self, offer):
        self.apply(OfferRescinded(offer))

    @invariant()
    def ended_jobs_are_final(self):
        for jid in self.ended:
            assert self.book.jobs[jid].state.value in ("FINISHED", "FAILED", "KILLED")
