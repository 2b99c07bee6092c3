"""JobBook: every Toil job's record and every transition of plastic's Mesos framework, pure.

The dask worker-state-machine shape: `handle(event, now) -> list[Command]`, no I/O and no
clock reads (time comes in as `now`), `validate()` checks the invariants (for tests).  The
shell (the Toil plugin and the Mesos adapter) applies one event at a time under its lock and
carries out the commands afterwards.  Events and commands live in jobbook_messages.

One job (a Toil batch-job id) runs as one or more attempts; attempt k has the Mesos task id
`<job_id>.<k>` (k from 1).  An infrastructure loss (spot preemption, drained or lost agent,
dropped launch) requeues the job under a new attempt and the same job id, so the Toil leader
never sees a failure; a job ends (JobEnded) exactly once.  Task states follow
plastic.core.lifecycle: QUEUED -> LAUNCHING -> STARTING -> RUNNING -> FINISHED | FAILED, any
live state -> KILLING -> KILLED, and live -> LOST -> QUEUED for a requeue (LOST is transient).

Spot notices (NoticeReceived, plastic.core.jobbook_notices): a terminate notice drains the agent
(each task on it finishes in the window if its runtime estimate fits with notice_margin_s, else it
is killed and requeued); a rebalance recommendation keeps new work off the agent as `rebalance`
says (ignore / avoid-long / drain).  On every Tick plastic.core.jobbook_health reports idle burst
agents and starving jobs.

Crash-resume (Resumed): the tasks of a previous leader incarnation are orphans
(plastic.core.orphans): reconciled (explicitly for those the records know, implicitly for the
rest), adopted while they can finish within adopt_s, killed otherwise, forgotten once they end.  Before Resumed, a status of an unknown
task is only recorded.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, get_args

from plastic.core import jobbook_health as health
from plastic.core import jobbook_notices as notices
from plastic.core import placement as pl
from plastic.core.jobbook_messages import (
    Acknowledge,
    AgentLost,
    AgentSeen,
    Command,
    DeclineOffers,
    Event,
    JobEnded,
    JobGone,
    JobIssued,
    KillRequested,
    KillTask,
    KnownTask,
    LaunchTasks,
    NoticeReceived,
    OfferRescinded,
    OffersReceived,
    OrphanChecked,
    Outcome,
    Reconcile,
    Reconnected,
    Record,
    ReportUnplaceable,
    Resumed,
    ReviveOffers,
    StatusReceived,
    SuppressOffers,
    TaskLaunch,
    Tick,
)
from plastic.core.jobbook_notices import Notice
from plastic.core.lifecycle import TaskState, check_transition
from plastic.core.model import Preempt, Resources
from plastic.core.orphans import Orphans

__all__ = [  # the book, plus every event and command (defined in jobbook_messages)
    "REBALANCE_MODES", "Acknowledge", "AgentLost", "AgentSeen", "Attempt", "Command", "DeclineOffers", "Event",
    "Job", "JobBook", "JobEnded", "JobGone", "JobIssued", "KillRequested", "KillTask", "KnownTask", "LaunchTasks", "NoticeReceived",
    "OfferRescinded", "OffersReceived", "OrphanChecked", "Outcome", "RebalanceMode", "Reconcile", "Reconnected", "Record",
    "ReportUnplaceable", "Resumed", "ReviveOffers", "StatusReceived", "SuppressOffers", "TaskLaunch", "Tick", "exit_code_of",
    "split_task_id", "task_id_of"
]

S = TaskState
LIVE = frozenset({S.LAUNCHING, S.STARTING, S.RUNNING, S.KILLING})
ENDED = frozenset({S.FINISHED, S.FAILED, S.KILLED})

# Mesos states that mean "the infrastructure lost the task", not the task's own fault.
LOSS_STATES = frozenset({"TASK_LOST", "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR",
                         "TASK_DROPPED", "TASK_UNKNOWN"})
TERMINAL_STATES = LOSS_STATES | {"TASK_FINISHED", "TASK_FAILED", "TASK_ERROR", "TASK_KILLED"}

# What a rebalance recommendation does to an agent: nothing but a record (ignore), no new long or
# unknown-length tasks there (avoid-long), or no new tasks at all (drain).  Running tasks are never
# touched: a rebalance recommendation has no deadline; a terminate notice, if one follows, has.
RebalanceMode = Literal["ignore", "avoid-long", "drain"]
REBALANCE_MODES: tuple[str, ...] = get_args(RebalanceMode)
EXIT_UNKNOWN = 255
_EXITED = re.compile(r"exited with status (-?\d+)")


def exit_code_of(message: str | None) -> int | None:
    """N from Mesos's "Command exited with status N", else None."""
    m = _EXITED.search(message or "")
    return int(m.group(1)) if m else None


def task_id_of(job_id: str, attempt: int) -> str:
    return f"{job_id}.{attempt}"


def split_task_id(mesos_task_id: str) -> tuple[str, int] | None:
    job_id, _, attempt = mesos_task_id.rpartition(".")
    return (job_id, int(attempt)) if job_id and attempt.isdigit() else None


@dataclass(slots=True)
class Attempt:
    attempt: int
    agent_id: str
    launched_at: float
    started_at: float | None = None
    ended_at: float | None = None
    end: str | None = None  # finished / failed / killed / preempted / lost / dropped / lost_for_good


@dataclass(slots=True)
class Job:
    job_id: str
    demand: Resources
    preempt: Preempt
    instance_type: str | None
    tool: str | None
    issued_at: float
    state: TaskState = S.QUEUED
    attempt: int = 1
    preemptions: int = 0
    losses: int = 0
    drops: int = 0
    agent_id: str | None = None
    kill_cause: str | None = None  # "leader" | "notice" while KILLING
    kill_sent_at: float | None = None
    kept_for_notice: bool = False  # on a noticed agent, left to finish
    launched_reliable_only: bool = False
    unplaceable_reason: str | None = None
    queued_at: float = 0.0  # when it last entered QUEUED (issue or requeue)
    starving_reported: bool = False  # a "starving" record went out for this wait
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def mesos_task_id(self) -> str:
        return task_id_of(self.job_id, self.attempt)

    @property
    def needs_reliable(self) -> bool:
        return self.pending().needs_reliable

    def pending(self) -> pl.PendingTask:
        return pl.PendingTask(self.mesos_task_id, self.demand, self.preempt, self.preemptions,
                              self.instance_type)

    @property
    def current(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts and self.attempts[-1].attempt == self.attempt else None


class JobBook:
    """The pure state machine.  See the module docstring and docs/design/toil-batch-system.md §7."""

    def __init__(
        self,
        runtime_estimate: Callable[[str | None], float | None] = lambda tool: None,
        *,
        notice_margin_s: float = 30.0,
        rebalance: RebalanceMode = "avoid-long",
        long_task_s: float = 600.0,
        max_lost_relaunches: int = 3,
        cluster_may_grow: bool = True,
        refuse_seconds: float = pl.DEFAULT_REFUSE_SECONDS,
        reconcile_every_s: float = 60.0,
        kill_retry_s: float = 30.0,
        idle_agent_s: float | None = 300.0,
        starving_s: float | None = 300.0,
        adopt_s: float = 0.0,
    ):
        if rebalance not in REBALANCE_MODES:
            raise ValueError(f"rebalance must be one of {', '.join(REBALANCE_MODES)}, not {rebalance!r}")
        self.runtime_estimate = runtime_estimate
        self.notice_margin_s = notice_margin_s
        self.rebalance = rebalance
        self.long_task_s = long_task_s
        self.max_lost_relaunches = max_lost_relaunches
        self.cluster_may_grow = cluster_may_grow
        self.refuse_seconds = refuse_seconds
        self.reconcile_every_s = reconcile_every_s
        self.kill_retry_s = kill_retry_s
        self.idle_agent_s = idle_agent_s  # None: no idle-agent records
        self.starving_s = starving_s  # None: no starving records
        self.adopt_s = adopt_s  # after Resumed: how long a running orphan may take to finish

        self.jobs: dict[str, Job] = {}
        self.agents: dict[str, pl.AgentInfo] = {}
        self.gone: set[str] = set()
        self.draining: dict[str, Notice] = {}  # terminate notices
        self.rebalancing: dict[str, Notice] = {}  # rebalance recommendations
        self.suppressed = False
        self.seen_uuids: set[str] = set()
        self.ended_count: dict[str, int] = {}
        self.last_reconcile: float | None = None
        # provisioning health (plastic.core.jobbook_health): when each agent was first seen or last
        # busy (a task placed there, or one that left it), and what was reported
        self.agent_since: dict[str, float] = {}
        self.last_busy: dict[str, float] = {}
        self.idle_agents: dict[str, float] = {}  # reported idle agent -> start of its idle period
        self.starving: dict[str, str] = {}  # reported starving job -> why no live agent can take it
        self.orphans: Orphans | None = None  # after Resumed: the previous incarnation's tasks

    # ------------------------------------------------------------ queries

    def queued(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.state is S.QUEUED]

    def live(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.state in LIVE]

    def on_agent(self, agent_id: str) -> list[Job]:
        return [j for j in self.jobs.values() if j.state in LIVE and j.agent_id == agent_id]

    def cluster(self) -> dict[str, pl.AgentInfo]:
        """Agents that can take new work (for the "could ever fit" check): not gone, not draining."""
        return {a: info for a, info in self.agents.items() if a not in self.gone and a not in self.draining}

    def running_job_ids(self) -> list[str]:
        return [j.job_id for j in self.jobs.values() if j.state in (S.STARTING, S.RUNNING, S.KILLING)]

    # ------------------------------------------------------------ the one entry point

    def handle(self, event: Event, now: float) -> list[Command]:
        queue_was_empty = not self.queued()
        out: list[Command] = []
        match event:
            case JobIssued():
                self._issued(event, now, out)
            case KillRequested():
                self._kill_requested(event, now, out)
            case OffersReceived():
                self._offers(event, now, out)
            case OfferRescinded():
                out.append(Record("rescinded", {"offer_id": event.offer_id}))
            case StatusReceived():
                self._status(event, now, out)
            case AgentSeen():
                self._agent_seen(event.agent, now, out)
            case AgentLost():
                self._agent_lost(event, now, out)
            case NoticeReceived():
                notices.received(self, event, now, out)
            case Reconnected():
                self.suppressed = False  # a new subscription starts unsuppressed
                out.append(Record("reconnected", {"live": len(self.live())}))
                self._reconcile(now, out)
            case Resumed():
                self._resumed(event, now, out)
            case JobGone():
                self._job_gone(event, now, out)
            case OrphanChecked():
                if self.orphans is not None:
                    out.extend(self.orphans.checked(event.task_id, event.committed).commands())
            case Tick():
                self._tick(now, out)
            case _:
                raise TypeError(f"not a JobBook event: {event!r}")
        flow = pl.offer_flow(queue_was_empty, not self.queued(), self.suppressed)
        if flow is not None:
            self.suppressed = isinstance(flow, SuppressOffers)
            out.append(flow)
        return out

    # ------------------------------------------------------------ transitions

    def _move(self, job: Job, wanted: TaskState) -> None:
        check_transition("task", job.mesos_task_id, job.state, wanted)
        job.state = wanted

    def _end(self, job: Job, state: TaskState, outcome: Outcome, exit_code: int, now: float,
             out: list[Command], reason: str | None = None, message: str | None = None) -> None:
        cur = job.current if job.state in LIVE else None
        wall = 0.0
        if cur is not None:
            wall = max(now - (cur.started_at if cur.started_at is not None else cur.launched_at), 0.001)
            cur.ended_at, cur.end = now, outcome
        self._move(job, state)
        job.kill_cause = None
        job.kept_for_notice = False
        self.starving.pop(job.job_id, None)
        if cur is not None and job.agent_id is not None:
            self.last_busy[job.agent_id] = now
        self.ended_count[job.job_id] = self.ended_count.get(job.job_id, 0) + 1
        backing = job.mesos_task_id if cur is not None else None
        out.append(JobEnded(job.job_id, outcome, exit_code, wall, backing, reason, message))
        agent = self.agents.get(job.agent_id) if job.agent_id is not None else None
        out.append(Record("ended", {"job_id": job.job_id, "outcome": outcome, "state": str(state),
                                    "exit_code": exit_code, "attempt": job.attempt, "agent_id": job.agent_id,
                                    "cluster": agent.cluster if agent else None,
                                    "preemptible": agent.preemptible if agent else None,
                                    "wall_time_s": wall, "reason": reason, "message": message}))

    def _requeue(self, job: Job, cause: str, now: float, out: list[Command], *,
                 detail: str | None = None) -> None:
        """An infrastructure loss: back to QUEUED under a new attempt, no JobEnded (unless too many)."""
        agent_id = job.agent_id
        if job.kill_cause == "leader":  # the leader wanted it dead anyway
            self._end(job, S.KILLED, "killed", EXIT_UNKNOWN, now, out, reason=cause, message=detail)
            return
        preemptible_agent = (agent_id in self.draining
                             or (agent_id in self.agents and self.agents[agent_id].preemptible))
        if cause == "dropped":
            kind = "dropped"  # the launch never happened: counts nothing
        elif preemptible_agent:
            kind = "preempted"
        else:
            kind = "lost"
        if kind == "lost" and job.losses + 1 > self.max_lost_relaunches:
            self._end(job, S.FAILED, "lost_for_good", EXIT_UNKNOWN, now, out, reason=cause, message=detail)
            return
        was_reliable = job.needs_reliable
        cur = job.current
        if cur is not None:
            cur.ended_at, cur.end = now, kind
        old_task = job.mesos_task_id
        self._move(job, S.LOST)
        if kind == "preempted":
            job.preemptions += 1
        elif kind == "lost":
            job.losses += 1
        else:
            job.drops += 1
        job.attempt += 1
        job.agent_id = None
        job.kill_cause = None
        job.kill_sent_at = None
        job.kept_for_notice = False
        job.queued_at = now
        job.starving_reported = False
        if agent_id is not None:
            self.last_busy[agent_id] = now
        self._move(job, S.QUEUED)
        out.append(Record("requeue", {"job_id": job.job_id, "old_task": old_task, "new_task": job.mesos_task_id,
                                      "agent_id": agent_id, "cause": cause, "counted_as": kind,
                                      "preemptions": job.preemptions, "losses": job.losses, "detail": detail}))
        if job.needs_reliable and not was_reliable:
            out.append(Record("escalation", {"job_id": job.job_id, "preemptions": job.preemptions,
                                             "budget": job.preempt.max_preemptions}))

    # ------------------------------------------------------------ event handlers

    def _job_gone(self, ev: JobGone, now: float, out: list[Command]) -> None:
        """A requeued job whose earlier attempt committed its work before dying: it ends as finished
        instead of running again (a new attempt would only wait for a job the store no longer has)."""
        job = self.jobs.get(ev.job_id)
        if job is None or job.state is not S.QUEUED or job.attempt < 2:
            out.append(Record("job_gone_ignored", {"job_id": ev.job_id,
                                                   "state": None if job is None else str(job.state)}))
            return
        self._end(job, S.FINISHED, "finished", 0, now, out, reason="done_by_earlier_attempt",
                  message="the job store holds the work of an earlier attempt")

    def _issued(self, ev: JobIssued, now: float, out: list[Command]) -> None:
        if ev.job_id in self.jobs:
            out.append(Record("duplicate_issue", {"job_id": ev.job_id}))
            return
        job = Job(ev.job_id, ev.demand, ev.preempt, ev.instance_type, ev.tool, now, queued_at=now)
        self.jobs[ev.job_id] = job
        out.append(Record("issued", {"job_id": ev.job_id, "vcpus": ev.demand.vcpus, "ram_mib": ev.demand.ram_mib,
                                     "preempt": str(ev.preempt), "instance_type": ev.instance_type,
                                     "tool": ev.tool}))
        if self.cluster():  # with no agent known yet, every job would look unplaceable
            self._check_unplaceable([job], now, out)

    def _check_unplaceable(self, jobs: Iterable[Job], now: float, out: list[Command]) -> None:
        cluster = self.cluster().values()
        for job in jobs:
            if job.state is not S.QUEUED:
                continue
            reason = pl.why_unplaceable(job.pending(), cluster)
            self._unplaceable(job, reason, now, out)

    def _unplaceable(self, job: Job, reason: str | None, now: float, out: list[Command]) -> None:
        """Report once per reason; keep it queued if the cluster may grow, else end it as failed."""
        if reason == job.unplaceable_reason:
            return
        job.unplaceable_reason = reason
        if reason is None:
            out.append(Record("placeable_again", {"job_id": job.job_id}))
            return
        out.append(ReportUnplaceable(job.job_id, reason))
        out.append(Record("unplaceable", {"job_id": job.job_id, "reason": reason,
                                          "kept_queued": self.cluster_may_grow}))
        if not self.cluster_may_grow:
            self._end(job, S.KILLED, "failed", EXIT_UNKNOWN, now, out, reason="unplaceable", message=reason)

    def _kill_requested(self, ev: KillRequested, now: float, out: list[Command]) -> None:
        job = self.jobs.get(ev.job_id)
        if job is None or job.state in ENDED:
            out.append(Record("kill_ignored", {"job_id": ev.job_id, "why": "unknown" if job is None else "ended"}))
            return
        if job.state is S.QUEUED:
            self._end(job, S.KILLED, "killed", EXIT_UNKNOWN, now, out, reason="killed while queued")
            return
        if job.state is not S.KILLING:
            self._move(job, S.KILLING)
        job.kill_cause = "leader"
        job.kept_for_notice = False
        job.kill_sent_at = now
        out.append(KillTask(job.mesos_task_id, job.agent_id))
        out.append(Record("kill", {"job_id": job.job_id, "task": job.mesos_task_id, "cause": "leader"}))

    def _offers(self, ev: OffersReceived, now: float, out: list[Command]) -> None:
        for o in ev.offers:
            self._agent_seen(dataclasses.replace(o.agent, draining=False), now, out, quiet=True)
        offers = [dataclasses.replace(o, agent=dataclasses.replace(o.agent, draining=o.agent.agent_id in self.draining))
                  for o in ev.offers]
        queue = [j for j in self.queued()]
        by_task = {j.mesos_task_id: j for j in queue}
        cluster = self.cluster()
        free = {o.offer_id: o.available for o in offers}
        launches: list[pl.LaunchTask] = []
        unplaceable: dict[str, str] = {}
        kept_off = notices.kept_off_rebalancing(self, queue)
        if kept_off:
            # pass 1: the tasks a rebalance recommendation keeps off its agent (long or unknown-length
            # ones with avoid-long, every one with drain), those agents closed to them
            closed = [dataclasses.replace(o, agent=dataclasses.replace(o.agent, draining=True))
                      if o.agent.agent_id in self.rebalancing else o for o in offers]
            p1 = pl.place(closed, [j.pending() for j in queue if j.mesos_task_id in kept_off], cluster)
            launches += p1.launches
            unplaceable.update({u.task_id: u.reason for u in p1.unplaceable})
            for lt in p1.launches:
                free[lt.offer_id] = free[lt.offer_id] - lt.demand
            rest = [j for j in queue if j.mesos_task_id not in kept_off]
        else:
            rest = queue
        p2 = pl.place([dataclasses.replace(o, available=free[o.offer_id]) for o in offers],
                      [j.pending() for j in rest], cluster, refuse_seconds=self.refuse_seconds)
        launches += p2.launches
        unplaceable.update({u.task_id: u.reason for u in p2.unplaceable})
        per_offer: dict[str, list[TaskLaunch]] = {}
        agent_of: dict[str, str] = {}
        for lt in launches:
            job = by_task[lt.task_id]
            if lt.agent_id in self.draining or lt.agent_id in self.gone:  # place() guarantees it; belt and braces
                continue
            self._move(job, S.LAUNCHING)
            job.agent_id = lt.agent_id
            job.launched_reliable_only = job.needs_reliable
            job.unplaceable_reason = None
            job.starving_reported = False
            self.starving.pop(job.job_id, None)
            self.last_busy[lt.agent_id] = now
            job.attempts.append(Attempt(job.attempt, lt.agent_id, now))
            per_offer.setdefault(lt.offer_id, []).append(
                TaskLaunch(lt.task_id, job.job_id, job.attempt, lt.agent_id, lt.demand, lt.reason))
            agent_of[lt.offer_id] = lt.agent_id
            agent = self.agents[lt.agent_id]
            out.append(Record("placed", {"job_id": job.job_id, "task": lt.task_id, "agent_id": lt.agent_id,
                                         "cluster": agent.cluster, "preemptible": agent.preemptible,
                                         "instance_type": agent.instance_type, "offer_id": lt.offer_id,
                                         "why": lt.reason, "preemptions": job.preemptions}))
        for offer_id, tasks in per_offer.items():
            out.append(LaunchTasks(offer_id, agent_of[offer_id], tuple(tasks)))
        declined = tuple(o.offer_id for o in offers if o.offer_id not in per_offer)
        if declined:
            waiting = any(j.state is S.QUEUED and j.mesos_task_id not in unplaceable for j in queue)
            refuse = min(self.refuse_seconds, pl.BUSY_REFUSE_SECONDS) if waiting else self.refuse_seconds
            out.append(DeclineOffers(declined, refuse))
            out.append(Record("declined", {"offer_ids": list(declined), "refuse_seconds": refuse}))
        for task_id, reason in unplaceable.items():
            self._unplaceable(by_task[task_id], reason, now, out)

    def _agent_seen(self, agent: pl.AgentInfo, now: float, out: list[Command], quiet: bool = False) -> None:
        known = self.agents.get(agent.agent_id)
        back = agent.agent_id in self.gone
        self.agents[agent.agent_id] = dataclasses.replace(agent, draining=False)
        self.gone.discard(agent.agent_id)
        if known is None or back:
            self.agent_since[agent.agent_id] = now
            self.last_busy.pop(agent.agent_id, None)
        if known is None or back or known != self.agents[agent.agent_id]:
            if not quiet or known is None or back:
                out.append(Record("agent", {"agent_id": agent.agent_id, "preemptible": agent.preemptible,
                                            "cluster": agent.cluster, "instance_type": agent.instance_type,
                                            "vcpus": agent.capacity.vcpus, "ram_mib": agent.capacity.ram_mib,
                                            "back": back}))
            if not quiet:
                self._check_unplaceable(self.queued(), now, out)

    def _agent_lost(self, ev: AgentLost, now: float, out: list[Command]) -> None:
        first = ev.agent_id not in self.gone
        self.gone.add(ev.agent_id)
        jobs = self.on_agent(ev.agent_id)
        out.append(Record("agent_lost", {"agent_id": ev.agent_id, "jobs": [j.job_id for j in jobs],
                                         "duplicate": not first}))
        for job in jobs:
            self._requeue(job, "agent_lost", now, out)
        self._check_unplaceable(self.queued(), now, out)

    def _reconcile(self, now: float, out: list[Command]) -> None:
        self.last_reconcile = now
        tasks = tuple((j.mesos_task_id, j.agent_id) for j in self.live())
        if tasks:
            out.append(Reconcile(tasks))

    def _resumed(self, ev: Resumed, now: float, out: list[Command]) -> None:
        if self.orphans is None:
            self.orphans = Orphans(kill_retry_s=self.kill_retry_s, adopt_s=self.adopt_s,
                                   runtime_estimate=self.runtime_estimate)
        self.orphans.begin(now)
        for known in ev.known:
            self.orphans.expect(known, now)
        out.append(Record("resumed", {"known": [k.task_id for k in ev.known], "adopt_s": self.adopt_s,
                                      "framework_removed": ev.framework_removed}))
        if ev.framework_removed:  # the master killed them all when it removed the framework
            for step in self.orphans.removed():
                out.extend(step.commands())
            return
        if ev.known:
            out.append(Reconcile(tuple((k.task_id, k.agent_id) for k in ev.known)))
        out.append(Reconcile(()))  # implicit: every task the master holds for the framework

    def orphans_left(self) -> int:
        return 0 if self.orphans is None else len(self.orphans)

    def _tick(self, now: float, out: list[Command]) -> None:
        if self.orphans is not None:
            for step in self.orphans.tick(now):
                out.extend(step.commands())
        for job in self.live():
            notice = self.draining.get(job.agent_id)
            if notice is not None and now >= notice.terminate_at:
                # the agent is gone by now, whatever the master says later
                out.append(KillTask(job.mesos_task_id, job.agent_id))
                self._requeue(job, "notice_deadline", now, out)
            elif job.kept_for_notice and not notices.fits_window(self, job, now):
                notices.kill_for_notice(self, job, now, out)
            elif job.state is S.KILLING and job.kill_sent_at is not None and now - job.kill_sent_at >= self.kill_retry_s:
                job.kill_sent_at = now
                out.append(KillTask(job.mesos_task_id, job.agent_id))
        if self.last_reconcile is None or now - self.last_reconcile >= self.reconcile_every_s:
            self._reconcile(now, out)
        health.check(self, now, out)

    # ------------------------------------------------------------ status updates

    def _status(self, ev: StatusReceived, now: float, out: list[Command]) -> None:
        ack = [Acknowledge(ev.agent_id, ev.mesos_task_id, ev.uuid)] if ev.uuid else []
        if ev.uuid and ev.uuid in self.seen_uuids:
            out.append(Record("duplicate_status", {"task": ev.mesos_task_id, "state": ev.state, "uuid": ev.uuid}))
            out.extend(ack)  # the first ack may have been lost: acknowledge again, change nothing
            return
        if ev.uuid:
            self.seen_uuids.add(ev.uuid)
        parsed = split_task_id(ev.mesos_task_id)
        job = self.jobs.get(parsed[0]) if parsed else None
        if job is None and self.orphans is not None:
            notice = self.draining.get(ev.agent_id or "")
            deadline = None if notice is None else notice.terminate_at - self.notice_margin_s
            out.extend(self.orphans.status(ev.mesos_task_id, ev.state, ev.agent_id, now, deadline).commands())
        elif job is None:
            out.append(Record("unknown_task", {"task": ev.mesos_task_id, "state": ev.state}))
        elif parsed[1] != job.attempt or job.state not in LIVE:
            out.append(Record("stale_status", {"task": ev.mesos_task_id, "state": ev.state,
                                               "job_state": str(job.state), "current": job.mesos_task_id}))
            if ev.state not in TERMINAL_STATES and ev.state != "TASK_KILLING":
                out.append(KillTask(ev.mesos_task_id, ev.agent_id))  # a zombie of an old attempt
        else:
            self._live_status(job, ev, now, out)
        out.extend(ack)  # only after the book recorded the update

    def _live_status(self, job: Job, ev: StatusReceived, now: float, out: list[Command]) -> None:
        st = ev.state
        cur = job.current
        if st in ("TASK_STAGING", "TASK_STARTING"):
            if job.state is S.LAUNCHING:
                self._move(job, S.STARTING)
        elif st == "TASK_RUNNING":
            if job.state in (S.LAUNCHING, S.STARTING):
                self._move(job, S.RUNNING)
            if cur is not None and cur.started_at is None:
                cur.started_at = now
                out.append(Record("running", {"job_id": job.job_id, "task": job.mesos_task_id,
                                              "agent_id": job.agent_id}))
        elif st == "TASK_KILLING":
            pass  # a kill in progress (ours, or a drain's); TASK_KILLED decides
        elif st == "TASK_FINISHED":
            code = ev.exit_code if ev.exit_code is not None else 0
            self._end(job, S.FINISHED, "finished", code, now, out, ev.reason, ev.message)
        elif st in ("TASK_FAILED", "TASK_ERROR"):
            code = ev.exit_code if ev.exit_code is not None else exit_code_of(ev.message)
            self._end(job, S.FAILED, "failed", EXIT_UNKNOWN if code is None else code, now, out,
                      ev.reason, ev.message)
        elif st == "TASK_KILLED":
            if job.kill_cause == "leader":
                self._end(job, S.KILLED, "killed", EXIT_UNKNOWN, now, out, ev.reason, ev.message)
            elif job.kill_cause == "notice" or ev.reason == "REASON_AGENT_DRAINING":
                self._requeue(job, "notice_kill" if job.kill_cause == "notice" else "agent_draining", now, out,
                              detail=ev.message)
            else:  # killed by someone else: a failure for Toil to retry with its own budget
                code = ev.exit_code if ev.exit_code is not None else exit_code_of(ev.message)
                self._end(job, S.FAILED, "failed", EXIT_UNKNOWN if code is None else code, now, out,
                          ev.reason or "killed by someone else", ev.message)
        elif st in LOSS_STATES:
            self._requeue(job, "dropped" if st == "TASK_DROPPED" else st.removeprefix("TASK_").lower(), now, out,
                          detail=ev.reason)
        else:
            out.append(Record("unknown_state", {"task": ev.mesos_task_id, "state": st}))

    # ------------------------------------------------------------ invariants

    def validate(self) -> None:
        """Raise AssertionError when an invariant does not hold (for tests)."""
        for jid, job in self.jobs.items():
            assert job.job_id == jid
            assert job.state is not S.LOST, f"{jid}: LOST is transient"
            assert job.attempt == 1 + job.preemptions + job.losses + job.drops, jid
            ended = self.ended_count.get(jid, 0)
            assert ended == (1 if job.state in ENDED else 0), f"{jid}: ended {ended} times in {job.state}"
            if job.state in LIVE:
                assert job.agent_id is not None, jid
                assert job.agent_id not in self.gone, f"{jid} live on gone agent {job.agent_id}"
                assert job.current is not None and job.current.agent_id == job.agent_id, jid
                if job.launched_reliable_only:
                    assert not self.agents[job.agent_id].preemptible, f"{jid}: reliable job on preemptible agent"
                assert (job.kill_cause is not None) <= (job.state is S.KILLING), jid
                assert not (job.kept_for_notice and job.state is S.KILLING), jid
                if job.kept_for_notice:
                    assert job.agent_id in self.draining, jid
            if job.state is S.QUEUED:
                assert job.agent_id is None and job.kill_cause is None and not job.kept_for_notice, jid
                assert job.current is None, f"{jid}: queued attempt already launched"
            for a, b in zip(job.attempts, job.attempts[1:]):
                assert a.attempt < b.attempt and a.end is not None, jid
        assert self.suppressed == (not self.queued()), "suppressed iff nothing is queued"
