"""A resumed run in the JobBook (plastic.core.book.jobbook), pure: the previous leader's tasks handed to
the orphans (plastic.core.book.orphans) and reconciled, and the job store's answers (a requeued job
whose earlier attempt committed its work ends as finished; an orphan's work found or not)."""

from __future__ import annotations

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book import records as rec
from plastic.core.book.decisions import Output
from plastic.core.book.endings import end_job
from plastic.core.book.lifecycle import JobOutcome, TaskState
from plastic.core.book.orphans import LIVE_RECORDS, Orphans
from plastic.core.book.state import BookState

S = TaskState


def resumed(book: BookState, ev: evt.Resumed, now: float, out: list[Output]) -> None:
    if book.orphans is None:
        book.orphans = Orphans(kill_retry_s=book.kill_retry_s, adopt_s=book.adopt_s, runtime_estimate=book.estimate)
    book.orphans.begin(now)
    known = [p for p in ev.prior if p.state in LIVE_RECORDS and p.mesos_task_id]
    for prior in ev.prior:
        if prior.state == S.QUEUED:  # launched or not? the reconciliation tells (Orphans.defer_restart)
            book.orphans.defer_restart(prior)
    for prior in known:
        book.orphans.expect(prior, now)
    for tool in dict.fromkeys(p.tool for p in known):
        if book.runtimes.first_sight(tool):
            out.append(cmd.LoadRuntimeHistory(str(tool)))
    task_ids = tuple(str(p.mesos_task_id) for p in known)
    out.append(rec.ResumeBegan(task_ids, book.adopt_s, ev.framework_removed))
    if ev.framework_removed:  # the master killed them all when it removed the framework
        for step in book.orphans.removed():
            out.extend(step.commands())
        return
    if known:
        out.append(cmd.Reconcile(tuple((str(p.mesos_task_id), p.agent_id) for p in known)))
    out.append(cmd.Reconcile(()))  # implicit: every task the master holds for the framework


def job_store_checked(book: BookState, ev: evt.JobStoreChecked, now: float, out: list[Output]) -> None:
    if ev.question == "committed":
        if book.orphans is not None:
            out.extend(book.orphans.checked(ev.key, ev.work_done).commands())
        return
    job = book.jobs.get(ev.key)
    if job is None or job.state is not S.QUEUED or job.attempt < 2:
        out.append(rec.JobGoneIgnored(ev.key, None if job is None else str(job.state)))
        return
    job.awaiting_job_store = False
    if ev.work_done:
        # an earlier attempt committed its work before dying: a new attempt would only wait for a job
        # the store no longer has
        end_job(book, job, S.FINISHED, JobOutcome.FINISHED, 0, now, out, reason="done_by_earlier_attempt",
                message="the job store holds the work of an earlier attempt")
