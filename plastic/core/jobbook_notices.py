"""The JobBook's reaction to spot notices (plastic.core.jobbook), pure.

A terminate notice (NoticeReceived kind "terminate") drains the agent at once: the book places
nothing new there, and each task running on it either stays (record ``let_finish``) when its
tool's runtime estimate, less the time it has run, ends ``book.notice_margin_s`` before the
termination time, or is killed now (record ``drain_kill``) so that its job is requeued, counted as
a preemption.  A task kept for the notice that stops fitting (it outlived its estimate) is killed
on the next Tick.  Without an estimate a task is killed: there is nothing to promise a finish on.

A rebalance recommendation (kind "rebalance") touches no running task; ``book.rebalance`` says what
new work avoids the agent: nothing (ignore), jobs longer than ``book.long_task_s`` or of unknown
length (avoid-long), or every job (drain), unless only such agents could ever hold the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from plastic.core import placement as pl
from plastic.core.jobbook_messages import Command, KillTask, NoticeReceived, Record
from plastic.core.lifecycle import TaskState

if TYPE_CHECKING:
    from plastic.core.jobbook import Job, JobBook


@dataclass(frozen=True, slots=True)
class Notice:
    terminate_at: float
    received_at: float


def received(book: JobBook, ev: NoticeReceived, now: float, out: list[Command]) -> None:
    table = book.draining if ev.kind == "terminate" else book.rebalancing
    if ev.agent_id in table:
        out.append(Record("duplicate_notice", {"agent_id": ev.agent_id, "notice_kind": ev.kind}))
        return
    table[ev.agent_id] = Notice(ev.terminate_at, now)
    jobs = book.on_agent(ev.agent_id)
    if ev.kind != "terminate":
        out.append(Record("notice", {"agent_id": ev.agent_id, "notice_kind": ev.kind, "reaction": book.rebalance,
                                     "jobs": [j.job_id for j in jobs]}))
        return
    out.append(Record("notice", {"agent_id": ev.agent_id, "notice_kind": ev.kind, "terminate_at": ev.terminate_at,
                                 "window_s": ev.terminate_at - now, "jobs": [j.job_id for j in jobs]}))
    for job in jobs:
        if job.state is TaskState.KILLING:
            continue  # already on its way out; its end decides
        if fits_window(book, job, now):
            job.kept_for_notice = True
            out.append(Record("let_finish", {"job_id": job.job_id, "agent_id": ev.agent_id,
                                             "estimate_s": book.runtime_estimate(job.tool)}))
        else:
            kill_for_notice(book, job, now, out)
    if book.orphans is not None:  # a resume: the previous leader's adopted tasks there
        for step in book.orphans.on_notice(ev.agent_id, ev.terminate_at, book.notice_margin_s, now):
            out.extend(step.commands())
    book._check_unplaceable(book.queued(), now, out)


def fits_window(book: JobBook, job: Job, now: float) -> bool:
    """The job's expected end, plus the margin, comes before its agent's termination time."""
    notice = book.draining[job.agent_id]
    est = book.runtime_estimate(job.tool)
    if est is None:
        return False
    cur = job.current
    start = cur.started_at if cur and cur.started_at is not None else (cur.launched_at if cur else now)
    remaining = max(est - (now - start), 0.0)
    return now + remaining + book.notice_margin_s <= notice.terminate_at


def kill_for_notice(book: JobBook, job: Job, now: float, out: list[Command]) -> None:
    book._move(job, TaskState.KILLING)
    job.kill_cause = "notice"
    job.kept_for_notice = False
    job.kill_sent_at = now
    out.append(KillTask(job.mesos_task_id, job.agent_id))
    out.append(Record("drain_kill", {"job_id": job.job_id, "task": job.mesos_task_id, "agent_id": job.agent_id,
                                     "estimate_s": book.runtime_estimate(job.tool)}))


def is_long(book: JobBook, job: Job) -> bool:
    est = book.runtime_estimate(job.tool)
    return est is None or est > book.long_task_s


def kept_off_rebalancing(book: JobBook, queue: list[Job]) -> set[str]:
    """Task ids of queued jobs that must not start on an agent with a rebalance recommendation.

    A job that only such agents could ever hold is not kept off them: waiting for them to go away
    could be forever (a recommendation need not end in an interruption)."""
    if book.rebalance == "ignore" or not book.rebalancing:
        return set()
    steady = [a for a_id, a in book.cluster().items() if a_id not in book.rebalancing]
    if not steady:
        return set()
    return {j.mesos_task_id for j in queue
            if (book.rebalance == "drain" or is_long(book, j))
            and pl.why_unplaceable(j.pending(), steady) is None}
