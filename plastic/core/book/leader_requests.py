"""The Toil leader's requests in the JobBook (plastic.core.book.jobbook), pure: a job issued (queued,
its tool's runtime history asked for, its placeability checked), a job's kill asked for (ended at once
while queued, else KILLING and a KillTask)."""

from __future__ import annotations

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book import records as rec
from plastic.core.book.decisions import Output
from plastic.core.book.endings import end_job, move
from plastic.core.book.jobs import ENDED, EXIT_UNKNOWN, Job
from plastic.core.book.lifecycle import JobOutcome, TaskState
from plastic.core.book.state import BookState
from plastic.core.book.unplaceable import check_unplaceable

S = TaskState


def job_issued(book: BookState, ev: evt.JobIssued, now: float, out: list[Output]) -> None:
    if book.orphans is not None:  # Toil issues once the orphans are accounted for
        out.extend(book.orphans.restarts_never_launched(now, settled=True))
    if ev.job_id in book.jobs:
        out.append(rec.IssueRepeated(ev.job_id))
        return
    job = Job(ev.job_id, ev.demand, ev.preempt, ev.instance_type, ev.tool, now, ev.job_store_id, ev.name,
              queued_at=now, step=ev.step)
    book.jobs[ev.job_id] = job
    out.append(rec.JobQueued(ev.job_id, ev.demand.vcpus, ev.demand.ram_mib, str(ev.preempt), ev.instance_type,
                             ev.tool, ev.name, ev.step, ev.job_store_id))
    if book.runtimes.first_sight(ev.tool):
        out.append(cmd.LoadRuntimeHistory(str(ev.tool)))
    if book.cluster():  # with no agent known yet, every job would look unplaceable
        check_unplaceable(book, [job], now, out)


def kill_requested(book: BookState, ev: evt.KillRequested, now: float, out: list[Output]) -> None:
    job = book.jobs.get(ev.job_id)
    if job is None or job.state in ENDED:
        out.append(rec.KillIgnored(ev.job_id, "unknown" if job is None else "ended"))
        return
    if job.state is S.QUEUED:
        end_job(book, job, S.KILLED, JobOutcome.KILLED, EXIT_UNKNOWN, now, out, reason="killed while queued")
        return
    if job.state is not S.KILLING:
        move(job, S.KILLING, "kill (leader)", out, details={"kill_cause": "leader"})
    job.kill_cause = "leader"
    job.kept_for_notice = False
    job.kill_sent_at = now
    out.append(cmd.KillTask(job.mesos_task_id, job.agent_id))
    out.append(rec.KillSent(job.job_id, job.mesos_task_id, "leader"))
