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

The book's state and queries are plastic.core.book.state (BookState); the book dispatches each event
to the module that decides on it: the leader's requests (leader_requests), offers (offer_handling),
status updates (status_handling), agents and notices (agent_handling), a resume and the job store's
answers (resume_handling); how an attempt ends (endings) and the placeability of queued jobs
(unplaceable) are shared by them.
"""

from __future__ import annotations

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book import placement as pl
from plastic.core.book import records as rec
from plastic.core.book.agent_handling import agent_lost, agent_seen, kill_for_notice, notice_received
from plastic.core.book.decisions import Decisions, Output
from plastic.core.book.endings import requeue_job
from plastic.core.book.invariants import check_invariants
from plastic.core.book.leader_requests import job_issued, kill_requested
from plastic.core.book.lifecycle import TaskState
from plastic.core.book.offer_handling import offers_received
from plastic.core.book.resume_handling import job_store_checked, resumed
from plastic.core.book.state import BookState
from plastic.core.book.status_handling import status_received

S = TaskState


class JobBook(BookState):
    """The pure state machine.  See the module docstring and docs/design/toil-batch-system.md §7."""

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
