"""JobBook: every Toil job's record and every transition of plastic's Mesos framework, pure.

The dask worker-state-machine shape: `handle(event, now) -> Decisions` (the commands and the records
of the step, apart: plastic.core.book.decisions), no I/O, no clock reads (time comes in as `now`);
`validate()` checks the invariants (for tests).  The shell applies one event (plastic.core.book.events)
at a time under its lock, stores the records (plastic.core.book.records) as they are, then carries
out the commands (plastic.core.book.commands) unchanged: Redis holds the task and agent states
decided here (TaskStateChanged, AgentStateChanged), so Redis and what Toil is told cannot disagree.
`config()` and the events are all a replay needs (plastic.core.book.replay).

A job (a Toil batch-job id) runs as one or more attempts (plastic.core.book.jobs); an infrastructure loss
(spot preemption, drained or lost agent, dropped launch) requeues it under a new attempt, so the Toil
leader sees no failure; a job ends (ReportJobEnd) exactly once.  Task states follow
plastic.core.book.lifecycle (QUEUED -> LAUNCHING -> STARTING -> RUNNING -> FINISHED | FAILED, live ->
KILLING -> KILLED, live -> LOST -> QUEUED).  A requeued job whose earlier attempt may have committed
its work waits for the job store's answer (CheckJobStore "gone") before it is placed again.

Spot notices: plastic.core.book.notices; runtime estimates: plastic.core.book.runtimes (this run's
finished jobs, and the history the shell loads when asked: LoadRuntimeHistory); idle agents and
starving jobs: plastic.core.book.health; the previous leader's tasks after a resume:
plastic.core.book.orphans (before Resumed, a status of an unknown task is only recorded).

The book holds the state and dispatches each event to the module that decides on it: the leader's
requests (leader_requests), offers (offer_handling), status updates (status_handling), agents and
notices (agent_handling), a resume and the job store's answers (resume_handling); how an attempt ends
(endings) and the placeability of queued jobs (unplaceable) are shared by them.
"""

from __future__ import annotations

from typing import Any

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book import placement as pl
from plastic.core.book import records as rec
from plastic.core.book.agent_handling import agent_lost, agent_seen, kill_for_notice, notice_received
from plastic.core.book.decisions import Decisions
from plastic.core.book.endings import requeue_job
from plastic.core.book.health import DEFAULT_IDLE_AGENT_S, DEFAULT_STARVING_S, ProvisioningHealth
from plastic.core.book.instances import AgentSighting, agent_of_instance
from plastic.core.book.invariants import check_invariants
from plastic.core.book.jobs import LIVE, Job
from plastic.core.book.leader_requests import job_issued, kill_requested
from plastic.core.book.lifecycle import AgentState, TaskState
from plastic.core.book.notices import RebalanceMode, SpotNotices
from plastic.core.book.offer_handling import offers_received
from plastic.core.book.orphans import Orphans
from plastic.core.book.resume_handling import job_store_checked, resumed
from plastic.core.book.runtimes import RuntimeHistory
from plastic.core.book.status_handling import status_received

S = TaskState
Output = cmd.Command | rec.Record  # what one step of the book gives: commands to carry out, records to keep


class JobBook:
    """The pure state machine.  See the module docstring and docs/design/toil-batch-system.md §7."""

    def __init__(
        self,
        *,
        notice_margin_s: float = 30.0,
        rebalance: RebalanceMode = "avoid-long",
        long_task_s: float = 600.0,
        max_lost_relaunches: int = 3,
        cluster_may_grow: bool = True,
        refuse_seconds: float = pl.DEFAULT_REFUSE_SECONDS,
        reconcile_every_s: float = 60.0,
        kill_retry_s: float = 30.0,
        idle_agent_s: float | None = DEFAULT_IDLE_AGENT_S,
        starving_s: float | None = DEFAULT_STARVING_S,
        adopt_s: float = 0.0,
    ):
        self.notices = SpotNotices(margin_s=notice_margin_s, rebalance=rebalance, long_task_s=long_task_s)
        self.health = ProvisioningHealth(idle_agent_s=idle_agent_s, starving_s=starving_s)
        self.runtimes = RuntimeHistory()
        self.max_lost_relaunches = max_lost_relaunches
        self.cluster_may_grow = cluster_may_grow
        self.refuse_seconds, self.reconcile_every_s, self.kill_retry_s = refuse_seconds, reconcile_every_s, kill_retry_s
        self.adopt_s = adopt_s  # after evt.Resumed: how long a running orphan may take to finish

        self.jobs: dict[str, Job] = {}
        self.agents: dict[str, pl.AgentInfo] = {}
        self.agent_states: dict[str, AgentState] = {}  # the agents' records (GONE is final there)
        self.gone: set[str] = set()
        self.ignored: set[str] = set()  # agents the Toil leader asked to give no new work
        self.suppressed = False
        self.seen_uuids: set[str] = set()
        self.ended_count: dict[str, int] = {}
        self.last_reconcile: float | None = None
        self.orphans: Orphans | None = None  # after evt.Resumed: the previous incarnation's tasks

    def config(self) -> dict[str, Any]:
        """The constructor's arguments: with the events, everything a replay needs."""
        n, h = self.notices, self.health
        return {"notice_margin_s": n.margin_s, "rebalance": n.rebalance, "long_task_s": n.long_task_s,
                "max_lost_relaunches": self.max_lost_relaunches, "cluster_may_grow": self.cluster_may_grow,
                "refuse_seconds": self.refuse_seconds, "reconcile_every_s": self.reconcile_every_s,
                "kill_retry_s": self.kill_retry_s, "idle_agent_s": h.idle_agent_s, "starving_s": h.starving_s,
                "adopt_s": self.adopt_s}

    # ------------------------------------------------------------ queries

    def estimate(self, tool: str | None) -> float | None:
        return self.runtimes.estimate(tool)

    def queued(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.state is S.QUEUED]

    def live(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.state in LIVE]

    def on_agent(self, agent_id: str) -> list[Job]:
        return [j for j in self.jobs.values() if j.state in LIVE and j.agent_id == agent_id]

    def cluster(self) -> dict[str, pl.AgentInfo]:
        """Agents that can take new work (for the "could ever fit" check): not gone, not draining."""
        return {a: info for a, info in self.agents.items() if a not in self.gone and a not in self.notices.draining}

    def running_job_ids(self) -> list[str]:
        return [j.job_id for j in self.jobs.values() if j.state in (S.STARTING, S.RUNNING, S.KILLING)]

    def agent_ids_at(self, address: str) -> list[str]:
        """Agent ids matching an address: "ip:port", a bare host (every agent on it) or an agent id."""
        ids = [a for a, info in self.agents.items() if a == address or info.address == address]
        if not ids:
            ids = [a for a, info in self.agents.items() if info.address and info.address.rsplit(":", 1)[0] == address]
        return ids

    def agent_of_instance(self, instance_id: str) -> str | None:
        """The agent on an EC2 instance (plastic.core.book.instances: the newest not gone)."""
        return agent_of_instance(AgentSighting(a, a in self.gone, float(order))
                                 for order, (a, info) in enumerate(self.agents.items())
                                 if info.instance_id == instance_id)

    def orphans_left(self) -> int:
        return 0 if self.orphans is None else len(self.orphans)

    def status_lines(self, now: float) -> list[str]:
        return self.health.status_lines(now, self.jobs, self.agents)

    # ------------------------------------------------------------ the one entry point

    def handle(self, event: evt.Event, now: float) -> Decisions:
        queue_was_empty, back = not self.queued(), False
        out: list[Output] = []
        match event:
            case evt.JobIssued():
                job_issued(self, event, now, out)
            case evt.KillRequested():
                kill_requested(self, event, now, out)
            case evt.OffersReceived():
                offers_received(self, event, now, out)
            case evt.OfferRescinded():
                out.append(rec.OfferWithdrawn(event.offer_id))
            case evt.StatusReceived():
                status_received(self, event, now, out)
            case evt.AgentSeen():
                agent_seen(self, event.agent, now, out)
            case evt.AgentLost():
                agent_lost(self, event, now, out)
            case evt.AgentsIgnored():  # agents taken back had their offers declined with a filter: revive
                back = not event.ignored and not self.ignored.isdisjoint(event.agent_ids)
                (self.ignored.update if event.ignored else self.ignored.difference_update)(event.agent_ids)
            case evt.NoticeReceived():
                notice_received(self, event, now, out)
            case evt.Registered():
                out.append(rec.FrameworkRegistered(event.framework_id))
            case evt.Reconnected():
                self.suppressed = False  # a new subscription starts unsuppressed
                out.append(rec.Resubscribed(len(self.live())))
                self._reconcile(now, out)
            case evt.Resumed():
                resumed(self, event, now, out)
            case evt.JobStoreChecked():
                job_store_checked(self, event, now, out)
            case evt.RuntimeHistoryLoaded():
                self.runtimes.loaded(event.tool, event.seconds)
            case evt.Tick():
                self._tick(now, out)
            case _:
                raise TypeError(f"not a JobBook event: {event!r}")
        flow = pl.offer_flow(queue_was_empty, not self.queued(), self.suppressed, agents_back=back)
        if flow is not None:
            self.suppressed = isinstance(flow, cmd.SuppressOffers)
            out.append(flow)
        return Decisions.of(out)

    # ------------------------------------------------------------ the clock

    def _reconcile(self, now: float, out: list[Output]) -> None:
        self.last_reconcile = now
        tasks = tuple((j.mesos_task_id, j.agent_id) for j in self.live())
        if tasks:
            out.append(cmd.Reconcile(tasks))

    def _tick(self, now: float, out: list[Output]) -> None:
        if self.orphans is not None:
            for step in self.orphans.tick(now):
                out.extend(step.commands())
            out.extend(self.orphans.restarts_never_launched(now))
        for job in self.live():
            if self.notices.past_deadline(job.agent_id, now):
                # the agent is gone by now, whatever the master says later
                out.append(cmd.KillTask(job.mesos_task_id, job.agent_id))
                requeue_job(self, job, "notice_deadline", now, out)
            elif job.kept_for_notice and not self.notices.fits_window(job, now, self.estimate):
                kill_for_notice(self, job, now, out)
            elif job.state is S.KILLING and job.kill_sent_at is not None and now - job.kill_sent_at >= self.kill_retry_s:
                job.kill_sent_at = now
                out.append(cmd.KillTask(job.mesos_task_id, job.agent_id))
        if self.last_reconcile is None or now - self.last_reconcile >= self.reconcile_every_s:
            self._reconcile(now, out)
        busy = {j.agent_id for j in self.live() if j.agent_id is not None}
        closed = self.gone | set(self.notices.draining)
        out.extend(self.health.check(now, self.agents, busy, closed, self.queued(), list(self.cluster().values())))

    # ------------------------------------------------------------ invariants

    def validate(self) -> None:
        """Raise AssertionError when an invariant does not hold (for tests): plastic.core.book.invariants."""
        check_invariants(self)
