"""JobBook: every Toil job's record and every transition of plastic's Mesos framework, pure.

The dask worker-state-machine shape: `handle(event, now) -> list[Command | Record]`, no I/O, no clock
reads (time comes in as `now`); `validate()` checks the invariants (for tests).  The shell applies one
event (plastic.core.book.events) at a time under its lock, carries out the commands
(jobbook_commands) unchanged and stores the records (jobbook_records) as they are: Redis holds the
task and agent states decided here (TaskStateChanged, AgentStateChanged), so Redis and what Toil is
told cannot disagree.  `config()` and the events are all a replay needs (plastic.core.book.replay).

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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book import placement as pl
from plastic.core.book import records as rec
from plastic.core.book.health import DEFAULT_IDLE_AGENT_S, DEFAULT_STARVING_S, ProvisioningHealth
from plastic.core.book.invariants import check_invariants
from plastic.core.book.jobs import (
    ENDED,
    EXIT_UNKNOWN,
    LIVE,
    TERMINAL_STATES,
    Attempt,
    Job,
    exit_code_of,
    loss_cause,
    split_task_id,
)
from plastic.core.book.lifecycle import (
    AgentState,
    AttemptOutcome,
    JobOutcome,
    TaskState,
    allowed,
    check_transition,
)
from plastic.core.book.notices import RebalanceMode, SpotNotices
from plastic.core.book.orphans import LIVE_RECORDS, Orphans
from plastic.core.book.records import AttemptEnded, TaskStateChanged
from plastic.core.book.runtimes import RuntimeHistory

S = TaskState
_ATTEMPT_OUTCOME = {JobOutcome.FINISHED: AttemptOutcome.FINISHED, JobOutcome.FAILED: AttemptOutcome.FAILED,
                    JobOutcome.KILLED: AttemptOutcome.KILLED, JobOutcome.LOST_FOR_GOOD: AttemptOutcome.LOST}
_REQUEUE_OUTCOME = {"preempted": AttemptOutcome.PREEMPTED, "lost": AttemptOutcome.LOST,
                    "dropped": AttemptOutcome.LOST}


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
        return next((a for a, info in self.agents.items() if info.instance_id == instance_id), None)

    def orphans_left(self) -> int:
        return 0 if self.orphans is None else len(self.orphans)

    def status_lines(self, now: float) -> list[str]:
        return self.health.status_lines(now, self.jobs, self.agents)

    # ------------------------------------------------------------ the one entry point

    def handle(self, event: evt.Event, now: float) -> list[Any]:
        queue_was_empty, back = not self.queued(), False
        out: list[Any] = []
        match event:
            case evt.JobIssued():
                self._issued(event, now, out)
            case evt.KillRequested():
                self._kill_requested(event, now, out)
            case evt.OffersReceived():
                self._offers(event, now, out)
            case evt.OfferRescinded():
                out.append(rec.OfferWithdrawn(event.offer_id))
            case evt.StatusReceived():
                self._status(event, now, out)
            case evt.AgentSeen():
                self._agent_seen(event.agent, now, out)
            case evt.AgentLost():
                self._agent_lost(event, now, out)
            case evt.AgentsIgnored():  # agents taken back had their offers declined with a filter: revive
                back = not event.ignored and not self.ignored.isdisjoint(event.agent_ids)
                (self.ignored.update if event.ignored else self.ignored.difference_update)(event.agent_ids)
            case evt.NoticeReceived():
                self._notice(event, now, out)
            case evt.Registered():
                out.append(rec.FrameworkRegistered(event.framework_id))
            case evt.Reconnected():
                self.suppressed = False  # a new subscription starts unsuppressed
                out.append(rec.Resubscribed(len(self.live())))
                self._reconcile(now, out)
            case evt.Resumed():
                self._resumed(event, now, out)
            case evt.JobStoreChecked():
                self._job_store_checked(event, now, out)
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
        return out

    # ------------------------------------------------------------ transitions

    def _move(self, job: Job, wanted: TaskState, reason: str, out: list[Any], *,
              details: Mapping[str, Any] | None = None, attempt: AttemptEnded | None = None,
              runtime_s: float | None = None) -> None:
        check_transition("task", job.mesos_task_id, job.state, wanted)
        previous, job.state = job.state, wanted
        out.append(TaskStateChanged(job.job_id, previous, wanted, reason, dict(details or {}), attempt, job.tool,
                                    runtime_s))

    def _attempt_ended(self, job: Job, cur: Attempt, outcome: AttemptOutcome, now: float, **kw: Any) -> AttemptEnded:
        agent = self.agents.get(cur.agent_id)
        return AttemptEnded(cur.attempt, outcome, cur.agent_id, agent.cluster if agent else None,
                            job.mesos_task_id, cur.ran_s(now), notice_age_s=self.notices.notice_age_s(cur.agent_id, now),
                            usage=cur.usage, **kw)

    def _end(self, job: Job, state: TaskState, outcome: JobOutcome, exit_code: int, now: float,
             out: list[Any], reason: str | None = None, message: str | None = None) -> None:
        cur = job.current if job.state in LIVE else None
        wall = 0.0
        attempt = None
        if cur is not None:
            wall = max(cur.ran_s(now), 0.001)
            cur.ended_at, cur.end = now, str(outcome)
            why = "; ".join(x for x in (reason, message) if x)
            attempt = self._attempt_ended(job, cur, _ATTEMPT_OUTCOME[outcome], now, reason=why or None,
                                          exit_code=exit_code, wall_time_s=wall)
        finished = outcome is JobOutcome.FINISHED and attempt is not None
        self._move(job, state, f"ended {outcome}", out, attempt=attempt, runtime_s=wall if finished else None,
                   details={"outcome": str(outcome), "exit_code": exit_code, "wall_time_s": wall})
        if finished:
            self.runtimes.observed(job.tool, wall)
        job.kill_cause = None
        job.kept_for_notice = False
        job.awaiting_job_store = False
        self.health.job_left_queue(job.job_id)
        if cur is not None and job.agent_id is not None:
            self.health.agent_busy(job.agent_id, now)
        self.ended_count[job.job_id] = self.ended_count.get(job.job_id, 0) + 1
        backing = job.mesos_task_id if cur is not None else None
        out.append(cmd.ReportJobEnd(job.job_id, outcome, exit_code, wall, backing, reason, message))
        agent = self.agents.get(job.agent_id) if job.agent_id is not None else None
        out.append(rec.JobEnded(job.job_id, str(outcome), str(state), exit_code, job.attempt, job.agent_id,
                            agent.cluster if agent else None, agent.preemptible if agent else None, wall,
                            reason, message, cur.usage if cur is not None else None))

    def _requeue(self, job: Job, cause: str, now: float, out: list[Any], *, detail: str | None = None) -> None:
        """An infrastructure loss: back to QUEUED under a new attempt, no job end (unless too many)."""
        agent_id = job.agent_id
        if job.kill_cause == "leader":  # the leader wanted it dead anyway
            self._end(job, S.KILLED, JobOutcome.KILLED, EXIT_UNKNOWN, now, out, reason=cause, message=detail)
            return
        preemptible_agent = (agent_id in self.notices.draining
                             or (agent_id in self.agents and self.agents[agent_id].preemptible))
        if cause == "dropped":
            kind = "dropped"  # the launch never happened: counts nothing
        elif preemptible_agent:
            kind = "preempted"
        else:
            kind = "lost"
        if kind == "lost" and job.losses + 1 > self.max_lost_relaunches:
            self._end(job, S.FAILED, JobOutcome.LOST_FOR_GOOD, EXIT_UNKNOWN, now, out, reason=cause, message=detail)
            return
        was_reliable = job.needs_reliable
        cur = job.current
        attempt = None
        if cur is not None:
            cur.ended_at, cur.end = now, kind
            attempt = self._attempt_ended(job, cur, _REQUEUE_OUTCOME[kind], now,
                                          reason=": ".join(x for x in (cause, detail) if x) or None, counted_as=kind)
        old_task = job.mesos_task_id
        if kind == "preempted":
            job.preemptions += 1
        elif kind == "lost":
            job.losses += 1
        else:
            job.drops += 1
        self._move(job, S.LOST, f"requeue ({kind})", out, attempt=attempt,
                   details={"agent": None, "preemptions": job.preemptions, "losses": job.losses})
        job.attempt += 1
        job.agent_id = None
        job.kill_cause = None
        job.kill_sent_at = None
        job.kept_for_notice = False
        job.queued_at = now
        if agent_id is not None:
            self.health.agent_busy(agent_id, now)
        self._move(job, S.QUEUED, "requeue", out)
        out.append(rec.JobRequeued(job.job_id, old_task, job.mesos_task_id, agent_id, cause, kind, job.preemptions,
                               job.losses, detail))
        if job.needs_reliable and not was_reliable:
            out.append(rec.JobEscalated(job.job_id, job.preemptions, job.preempt.max_preemptions))
        if job.job_store_id:  # its killed attempt may have committed the job: ask before running it again
            job.awaiting_job_store = True
            out.append(cmd.CheckJobStore(job.job_id, job.job_store_id, "gone"))

    # ------------------------------------------------------------ event handlers

    def _job_store_checked(self, ev: evt.JobStoreChecked, now: float, out: list[Any]) -> None:
        if ev.question == "committed":
            if self.orphans is not None:
                out.extend(self.orphans.checked(ev.key, ev.work_done).commands())
            return
        job = self.jobs.get(ev.key)
        if job is None or job.state is not S.QUEUED or job.attempt < 2:
            out.append(rec.JobGoneIgnored(ev.key, None if job is None else str(job.state)))
            return
        job.awaiting_job_store = False
        if ev.work_done:
            # an earlier attempt committed its work before dying: a new attempt would only wait for a job
            # the store no longer has
            self._end(job, S.FINISHED, JobOutcome.FINISHED, 0, now, out, reason="done_by_earlier_attempt",
                      message="the job store holds the work of an earlier attempt")

    def _issued(self, ev: evt.JobIssued, now: float, out: list[Any]) -> None:
        if self.orphans is not None:  # Toil issues once the orphans are accounted for
            out.extend(self.orphans.restarts_never_launched(now, settled=True))
        if ev.job_id in self.jobs:
            out.append(rec.IssueRepeated(ev.job_id))
            return
        job = Job(ev.job_id, ev.demand, ev.preempt, ev.instance_type, ev.tool, now, ev.job_store_id, ev.name,
                  queued_at=now, step=ev.step)
        self.jobs[ev.job_id] = job
        out.append(rec.JobQueued(ev.job_id, ev.demand.vcpus, ev.demand.ram_mib, str(ev.preempt), ev.instance_type,
                             ev.tool, ev.name, ev.step, ev.job_store_id))
        if self.runtimes.first_sight(ev.tool):
            out.append(cmd.LoadRuntimeHistory(str(ev.tool)))
        if self.cluster():  # with no agent known yet, every job would look unplaceable
            self._check_unplaceable([job], now, out)

    def _check_unplaceable(self, jobs: Iterable[Job], now: float, out: list[Any]) -> None:
        cluster = self.cluster().values()
        for job in jobs:
            if job.state is not S.QUEUED:
                continue
            reason = pl.why_unplaceable(job.pending(), cluster)
            self._unplaceable(job, reason, now, out)

    def _unplaceable(self, job: Job, reason: str | None, now: float, out: list[Any]) -> None:
        """Report once per reason; keep it queued if the cluster may grow, else end it as failed."""
        if reason == job.unplaceable_reason:
            return
        job.unplaceable_reason = reason
        if reason is None:
            out.append(rec.JobPlaceableAgain(job.job_id))
            return
        out.append(cmd.ReportUnplaceable(job.job_id, reason))
        out.append(rec.JobUnplaceable(job.job_id, reason, self.cluster_may_grow))
        if not self.cluster_may_grow:
            self._end(job, S.KILLED, JobOutcome.FAILED, EXIT_UNKNOWN, now, out, reason="unplaceable", message=reason)

    def _kill_requested(self, ev: evt.KillRequested, now: float, out: list[Any]) -> None:
        job = self.jobs.get(ev.job_id)
        if job is None or job.state in ENDED:
            out.append(rec.KillIgnored(ev.job_id, "unknown" if job is None else "ended"))
            return
        if job.state is S.QUEUED:
            self._end(job, S.KILLED, JobOutcome.KILLED, EXIT_UNKNOWN, now, out, reason="killed while queued")
            return
        if job.state is not S.KILLING:
            self._move(job, S.KILLING, "kill (leader)", out, details={"kill_cause": "leader"})
        job.kill_cause = "leader"
        job.kept_for_notice = False
        job.kill_sent_at = now
        out.append(cmd.KillTask(job.mesos_task_id, job.agent_id))
        out.append(rec.KillSent(job.job_id, job.mesos_task_id, "leader"))

    def _offers(self, ev: evt.OffersReceived, now: float, out: list[Any]) -> None:
        for o in ev.offers:
            known = self.agents.get(o.agent.agent_id)
            cap = o.agent.capacity if known is None else pl.Resources(
                max(known.capacity.vcpus, o.agent.capacity.vcpus), max(known.capacity.ram_mib, o.agent.capacity.ram_mib))
            address = o.agent.address or (known.address if known else "")
            self._agent_seen(dataclasses.replace(o.agent, capacity=cap, address=address, draining=False), now, out,
                             quiet=True)
        offers = [dataclasses.replace(o, agent=self.agents[o.agent.agent_id]) for o in ev.offers]
        queued = self.queued()
        queue = [j for j in queued if not j.awaiting_job_store]
        by_task = {j.mesos_task_id: j for j in queue}
        cluster = self.cluster()
        kept_off = self.notices.kept_off_rebalancing(queue, cluster, self.estimate)
        placement = pl.place(offers, [j.pending(avoid_rebalancing=j.mesos_task_id in kept_off) for j in queue],
                             cluster, refuse_seconds=self.refuse_seconds, draining=self.notices.draining.keys(),
                             rebalancing=self.notices.rebalancing.keys(), ignored=self.ignored,
                             work_held=len(queue) < len(queued))
        per_offer: dict[str, list[cmd.TaskLaunch]] = {}
        agent_of: dict[str, str] = {}
        for lt in placement.launches:
            job = by_task[lt.task_id]
            agent = self.agents[lt.agent_id]
            self._move(job, S.LAUNCHING, "placed", out,
                       details={"agent": lt.agent_id, "cluster": agent.cluster, "preemptible": agent.preemptible,
                                "mesos_task": lt.task_id})
            job.agent_id = lt.agent_id
            job.launched_reliable_only = job.needs_reliable
            job.unplaceable_reason = None
            self.health.job_left_queue(job.job_id)
            self.health.agent_busy(lt.agent_id, now)
            job.attempts.append(Attempt(job.attempt, lt.agent_id, now))
            per_offer.setdefault(lt.offer_id, []).append(
                cmd.TaskLaunch(lt.task_id, job.job_id, job.attempt, lt.agent_id, lt.demand, lt.reason))
            agent_of[lt.offer_id] = lt.agent_id
            out.append(rec.TaskPlaced(job.job_id, lt.task_id, lt.agent_id, agent.cluster, agent.preemptible,
                                  agent.instance_type, lt.offer_id, lt.reason, job.preemptions))
        for offer_id, tasks in per_offer.items():
            out.append(cmd.LaunchTasks(offer_id, agent_of[offer_id], tuple(tasks)))
        ignored = set(placement.ignored)
        if ignored:
            out.append(cmd.DeclineOffers(placement.ignored, self.refuse_seconds))
            out.append(rec.IgnoredOffersDeclined(placement.ignored))
        declined = tuple(d.offer_id for d in placement.declines if d.offer_id not in ignored)
        if declined:
            refuse = next(d.refuse_seconds for d in placement.declines if d.offer_id not in ignored)
            out.append(cmd.DeclineOffers(declined, refuse))
            out.append(rec.OffersDeclined(declined, refuse))
        for u in placement.unplaceable:
            self._unplaceable(by_task[u.task_id], u.reason, now, out)

    def _agent_seen(self, agent: pl.AgentInfo, now: float, out: list[Any], quiet: bool = False) -> None:
        known = self.agents.get(agent.agent_id)
        back = agent.agent_id in self.gone
        self.agents[agent.agent_id] = dataclasses.replace(agent, draining=False)
        self.gone.discard(agent.agent_id)
        self.agent_states.setdefault(agent.agent_id, AgentState.ACTIVE)
        if known is None or back:
            self.health.agent_arrived(agent.agent_id, now)
        if known is None or back or known != self.agents[agent.agent_id]:
            if not quiet or known is None or back:
                out.append(rec.AgentUpdated(agent.agent_id, agent.preemptible, agent.cluster, agent.instance_type,
                                        agent.capacity.vcpus, agent.capacity.ram_mib, back, agent.address or None))
            if not quiet:
                self._check_unplaceable(self.queued(), now, out)

    def _agent_state(self, agent_id: str, wanted: AgentState, reason: str, out: list[Any], **kw: Any) -> None:
        state = self.agent_states.get(agent_id)
        if state is None or state == wanted or not allowed("agent", state, wanted):
            return  # unknown to the records, or already there; GONE is final
        self.agent_states[agent_id] = wanted
        out.append(rec.AgentStateChanged(agent_id, state, wanted, reason, **kw))

    def _agent_lost(self, ev: evt.AgentLost, now: float, out: list[Any]) -> None:
        first = ev.agent_id not in self.gone
        self.gone.add(ev.agent_id)
        jobs = self.on_agent(ev.agent_id)
        out.append(rec.AgentGone(ev.agent_id, tuple(j.job_id for j in jobs), not first))
        if first:
            self._agent_state(ev.agent_id, AgentState.GONE, "agent lost", out)
        for job in jobs:
            self._requeue(job, "agent_lost", now, out)
        self._check_unplaceable(self.queued(), now, out)

    def _notice(self, ev: evt.NoticeReceived, now: float, out: list[Any]) -> None:
        if not self.notices.received(ev.agent_id, ev.kind, ev.terminate_at, now):
            out.append(rec.NoticeRepeated(ev.agent_id, ev.kind))
            return
        jobs = self.on_agent(ev.agent_id)
        ids = tuple(j.job_id for j in jobs)
        if ev.kind != "terminate":
            out.append(rec.RebalanceNoticed(ev.agent_id, ev.kind, self.notices.rebalance, ids))
            return
        window_s = ev.terminate_at - now
        out.append(rec.TerminateNoticed(ev.agent_id, ev.kind, ev.terminate_at, window_s, ids))
        self._agent_state(ev.agent_id, AgentState.DRAINING, "notice", out, window_s=window_s)
        for job in jobs:
            if job.state is S.KILLING:
                continue  # already on its way out; its end decides
            if self.notices.fits_window(job, now, self.estimate):
                job.kept_for_notice = True
                out.append(rec.LeftToFinish(job.job_id, ev.agent_id, self.estimate(job.tool)))
            else:
                self._kill_for_notice(job, now, out)
        if self.orphans is not None:  # a resume: the previous leader's adopted tasks there
            margin_s = self.notices.margin_for(ev.agent_id)
            for step in self.orphans.on_notice(ev.agent_id, ev.terminate_at, margin_s, now):
                out.extend(step.commands())
        self._check_unplaceable(self.queued(), now, out)

    def _kill_for_notice(self, job: Job, now: float, out: list[Any]) -> None:
        self._move(job, S.KILLING, "kill (notice)", out, details={"kill_cause": "notice"})
        job.kill_cause = "notice"
        job.kept_for_notice = False
        job.kill_sent_at = now
        out.append(cmd.KillTask(job.mesos_task_id, job.agent_id))
        out.append(rec.KilledForNotice(job.job_id, job.mesos_task_id, job.agent_id, self.estimate(job.tool)))

    def _reconcile(self, now: float, out: list[Any]) -> None:
        self.last_reconcile = now
        tasks = tuple((j.mesos_task_id, j.agent_id) for j in self.live())
        if tasks:
            out.append(cmd.Reconcile(tasks))

    def _resumed(self, ev: evt.Resumed, now: float, out: list[Any]) -> None:
        if self.orphans is None:
            self.orphans = Orphans(kill_retry_s=self.kill_retry_s, adopt_s=self.adopt_s,
                                   runtime_estimate=self.estimate)
        self.orphans.begin(now)
        known = [p for p in ev.prior if p.state in LIVE_RECORDS and p.mesos_task_id]
        for prior in ev.prior:
            if prior.state == S.QUEUED:  # launched or not? the reconciliation tells (Orphans.defer_restart)
                self.orphans.defer_restart(prior)
        for prior in known:
            self.orphans.expect(prior, now)
        for tool in dict.fromkeys(p.tool for p in known):
            if self.runtimes.first_sight(tool):
                out.append(cmd.LoadRuntimeHistory(str(tool)))
        task_ids = tuple(str(p.mesos_task_id) for p in known)
        out.append(rec.ResumeBegan(task_ids, self.adopt_s, ev.framework_removed))
        if ev.framework_removed:  # the master killed them all when it removed the framework
            for step in self.orphans.removed():
                out.extend(step.commands())
            return
        if known:
            out.append(cmd.Reconcile(tuple((str(p.mesos_task_id), p.agent_id) for p in known)))
        out.append(cmd.Reconcile(()))  # implicit: every task the master holds for the framework

    def _tick(self, now: float, out: list[Any]) -> None:
        if self.orphans is not None:
            for step in self.orphans.tick(now):
                out.extend(step.commands())
            out.extend(self.orphans.restarts_never_launched(now))
        for job in self.live():
            if self.notices.past_deadline(job.agent_id, now):
                # the agent is gone by now, whatever the master says later
                out.append(cmd.KillTask(job.mesos_task_id, job.agent_id))
                self._requeue(job, "notice_deadline", now, out)
            elif job.kept_for_notice and not self.notices.fits_window(job, now, self.estimate):
                self._kill_for_notice(job, now, out)
            elif job.state is S.KILLING and job.kill_sent_at is not None and now - job.kill_sent_at >= self.kill_retry_s:
                job.kill_sent_at = now
                out.append(cmd.KillTask(job.mesos_task_id, job.agent_id))
        if self.last_reconcile is None or now - self.last_reconcile >= self.reconcile_every_s:
            self._reconcile(now, out)
        busy = {j.agent_id for j in self.live() if j.agent_id is not None}
        closed = self.gone | set(self.notices.draining)
        out.extend(self.health.check(now, self.agents, busy, closed, self.queued(), list(self.cluster().values())))

    # ------------------------------------------------------------ status updates

    def _status(self, ev: evt.StatusReceived, now: float, out: list[Any]) -> None:
        ack = [cmd.Acknowledge(ev.agent_id, ev.mesos_task_id, ev.uuid)] if ev.uuid else []
        if ev.uuid and ev.uuid in self.seen_uuids:
            out.append(rec.StatusRepeated(ev.mesos_task_id, ev.state, ev.uuid))
            out.extend(ack)  # the first ack may have been lost: acknowledge again, change nothing
            return
        if ev.uuid:
            self.seen_uuids.add(ev.uuid)
        parsed = split_task_id(ev.mesos_task_id)
        job = self.jobs.get(parsed[0]) if parsed else None
        if job is None and self.orphans is not None:
            out.extend(self.orphans.status(ev.mesos_task_id, ev.state, ev.agent_id, now,
                                           self.notices.deadline(ev.agent_id)).commands())
        elif job is None:
            out.append(rec.UnknownTaskSeen(ev.mesos_task_id, ev.state))
        elif parsed[1] != job.attempt or job.state not in LIVE:
            out.append(rec.StaleStatusSeen(ev.mesos_task_id, ev.state, str(job.state), job.mesos_task_id))
            if ev.state not in TERMINAL_STATES and ev.state != "TASK_KILLING":
                out.append(cmd.KillTask(ev.mesos_task_id, ev.agent_id))  # a zombie of an old attempt
        else:
            self._live_status(job, ev, now, out)
        out.extend(ack)  # only after the book recorded the update

    def _live_status(self, job: Job, ev: evt.StatusReceived, now: float, out: list[Any]) -> None:
        st, cur = ev.state, job.current
        if cur is not None and ev.usage is not None:
            cur.usage = ev.usage
        if st in ("TASK_STAGING", "TASK_STARTING"):
            if job.state is S.LAUNCHING:
                self._move(job, S.STARTING, "starting", out)
        elif st == "TASK_RUNNING":
            if job.state in (S.LAUNCHING, S.STARTING):
                self._move(job, S.RUNNING, "running", out)
            if cur is not None and cur.started_at is None:
                cur.started_at = now
                out.append(rec.TaskStarted(job.job_id, job.mesos_task_id, job.agent_id))
        elif st == "TASK_KILLING":
            pass  # a kill in progress (ours, or a drain's); TASK_KILLED decides
        elif st == "TASK_FINISHED":
            code = ev.exit_code if ev.exit_code is not None else 0
            self._end(job, S.FINISHED, JobOutcome.FINISHED, code, now, out, ev.reason, ev.message)
        elif (cause := loss_cause(st, ev.reason, job.kill_cause)) and (st != "TASK_KILLED" or job.kill_cause != "leader"):
            self._requeue(job, cause, now, out, detail=ev.message if st == "TASK_KILLED" else ev.reason)
        elif st in ("TASK_FAILED", "TASK_ERROR"):
            code = ev.exit_code if ev.exit_code is not None else exit_code_of(ev.message)
            self._end(job, S.FAILED, JobOutcome.FAILED, EXIT_UNKNOWN if code is None else code, now, out,
                      ev.reason, ev.message)
        elif st == "TASK_KILLED":
            if job.kill_cause == "leader":
                self._end(job, S.KILLED, JobOutcome.KILLED, EXIT_UNKNOWN, now, out, ev.reason, ev.message)
            else:  # killed by someone else: a failure for Toil to retry with its own budget
                code = ev.exit_code if ev.exit_code is not None else exit_code_of(ev.message)
                self._end(job, S.FAILED, JobOutcome.FAILED, EXIT_UNKNOWN if code is None else code, now, out,
                          ev.reason or "killed by someone else", ev.message)
        else:
            out.append(rec.UnknownStateSeen(ev.mesos_task_id, st))

    # ------------------------------------------------------------ invariants

    def validate(self) -> None:
        """Raise AssertionError when an invariant does not hold (for tests): plastic.core.book.invariants."""
        check_invariants(self)
