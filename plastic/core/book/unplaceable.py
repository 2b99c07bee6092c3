"""Queued jobs that no agent of the cluster could ever take, in the JobBook (plastic.core.book.jobbook),
pure: reported once per reason, kept queued while the cluster may grow, else ended as failed."""

from __future__ import annotations

from collections.abc import Iterable

from plastic.core.book import commands as cmd
from plastic.core.book import placement as pl
from plastic.core.book import records as rec
from plastic.core.book.decisions import Output
from plastic.core.book.endings import end_job
from plastic.core.book.jobs import EXIT_UNKNOWN, Job
from plastic.core.book.lifecycle import JobOutcome, TaskState
from plastic.core.book.state import BookState


def check_unplaceable(book: BookState, jobs: Iterable[Job], now: float, out: list[Output]) -> None:
    cluster = book.cluster().values()
    for job in jobs:
        if job.state is not TaskState.QUEUED:
            continue
        reason = pl.why_unplaceable(job.pending(), cluster)
        unplaceable(book, job, reason, now, out)


def unplaceable(book: BookState, job: Job, reason: str | None, now: float, out: list[Output]) -> None:
    """Report once per reason; keep it queued if the cluster may grow, else end it as failed."""
    if reason == job.unplaceable_reason:
        return
    job.unplaceable_reason = reason
    if reason is None:
        out.append(rec.JobPlaceableAgain(job.job_id))
        return
    out.append(cmd.ReportUnplaceable(job.job_id, reason))
    out.append(rec.JobUnplaceable(job.job_id, reason, book.cluster_may_grow))
    if not book.cluster_may_grow:
        end_job(book, job, TaskState.KILLED, JobOutcome.FAILED, EXIT_UNKNOWN, now, out, reason="unplaceable",
                message=reason)
