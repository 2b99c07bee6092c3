"""How a job's attempt ends in the JobBook (plastic.core.book.jobbook), pure: a task state moved, a job
ended (exactly once: ReportJobEnd), or a job requeued under a new attempt after an infrastructure loss
(preempted, lost, dropped), with the records each writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plastic.core.book import commands as cmd
from plastic.core.book import records as rec
from plastic.core.book.decisions import Output
from plastic.core.book.jobs import EXIT_UNKNOWN, LIVE, Attempt, Job
from plastic.core.book.lifecycle import (
    ATTEMPT_OUTCOME_OF_JOB,
    ATTEMPT_OUTCOME_OF_LOSS,
    AttemptOutcome,
    JobOutcome,
    TaskState,
    check_transition,
)
from plastic.core.book.records import AttemptEnded, TaskStateChanged
from plastic.core.book.state import BookState

S = TaskState


def move(job: Job, wanted: TaskState, reason: str, out: list[Output], *,
         details: Mapping[str, Any] | None = None, attempt: AttemptEnded | None = None,
         runtime_s: float | None = None) -> None:
    """The job's task to ``wanted`` (a transition the lifecycle allows), recorded."""
    check_transition("task", job.mesos_task_id, job.state, wanted)
    previous, job.state = job.state, wanted
    out.append(TaskStateChanged(job.job_id, previous, wanted, reason, dict(details or {}), attempt, job.tool,
                                runtime_s))


def attempt_ended(book: BookState, job: Job, cur: Attempt, outcome: AttemptOutcome, now: float,
                  **kw: Any) -> AttemptEnded:
    agent = book.agents.get(cur.agent_id)
    return AttemptEnded(cur.attempt, outcome, cur.agent_id, agent.cluster if agent else None,
                        job.mesos_task_id, cur.ran_s(now), notice_age_s=book.notices.notice_age_s(cur.agent_id, now),
                        usage=cur.usage, **kw)


def end_job(book: BookState, job: Job, state: TaskState, outcome: JobOutcome, exit_code: int, now: float,
            out: list[Output], reason: str | None = None, message: str | None = None) -> None:
    """The job ends for good: its task to ``state``, Toil told once (ReportJobEnd), JobEnded recorded."""
    cur = job.current if job.state in LIVE else None
    wall = 0.0
    attempt = None
    if cur is not None:
        wall = max(cur.ran_s(now), 0.001)
        cur.ended_at, cur.end = now, str(outcome)
        why = "; ".join(x for x in (reason, message) if x)
        attempt = attempt_ended(book, job, cur, ATTEMPT_OUTCOME_OF_JOB[outcome], now, reason=why or None,
                                exit_code=exit_code, wall_time_s=wall)
    finished = outcome is JobOutcome.FINISHED and attempt is not None
    move(job, state, f"ended {outcome}", out, attempt=attempt, runtime_s=wall if finished else None,
         details={"outcome": str(outcome), "exit_code": exit_code, "wall_time_s": wall})
    if finished:
        book.runtimes.observed(job.tool, wall)
    job.kill_cause = None
    job.kept_for_notice = False
    job.awaiting_job_store = False
    book.health.job_left_queue(job.job_id)
    if cur is not None and job.agent_id is not None:
        book.health.agent_busy(job.agent_id, now)
    book.ended_count[job.job_id] = book.ended_count.get(job.job_id, 0) + 1
    backing = job.mesos_task_id if cur is not None else None
    out.append(cmd.ReportJobEnd(job.job_id, outcome, exit_code, wall, backing, reason, message))
    agent = book.agents.get(job.agent_id) if job.agent_id is not None else None
    out.append(rec.JobEnded(job.job_id, str(outcome), str(state), exit_code, job.attempt, job.agent_id,
                            agent.cluster if agent else None, agent.preemptible if agent else None, wall,
                            reason, message, cur.usage if cur is not None else None))


def _loss_kind(book: BookState, agent_id: str | None, cause: str) -> str:
    """How a loss counts: dropped (the launch never happened), preempted (a spot or draining agent), lost."""
    if cause == "dropped":
        return "dropped"
    preemptible_agent = (agent_id in book.notices.draining
                         or (agent_id in book.agents and book.agents[agent_id].preemptible))
    return "preempted" if preemptible_agent else "lost"


def requeue_job(book: BookState, job: Job, cause: str, now: float, out: list[Output], *,
                detail: str | None = None) -> None:
    """An infrastructure loss: back to QUEUED under a new attempt, no job end (unless too many)."""
    agent_id = job.agent_id
    if job.kill_cause == "leader":  # the leader wanted it dead anyway
        end_job(book, job, S.KILLED, JobOutcome.KILLED, EXIT_UNKNOWN, now, out, reason=cause, message=detail)
        return
    kind = _loss_kind(book, agent_id, cause)
    if kind == "lost" and job.losses + 1 > book.max_lost_relaunches:
        end_job(book, job, S.FAILED, JobOutcome.LOST_FOR_GOOD, EXIT_UNKNOWN, now, out, reason=cause, message=detail)
        return
    was_reliable = job.needs_reliable
    cur = job.current
    attempt = None
    if cur is not None:
        cur.ended_at, cur.end = now, kind
        attempt = attempt_ended(book, job, cur, ATTEMPT_OUTCOME_OF_LOSS[kind], now,
                                reason=": ".join(x for x in (cause, detail) if x) or None, counted_as=kind)
    old_task = job.mesos_task_id
    if kind == "preempted":
        job.preemptions += 1
    elif kind == "lost":
        job.losses += 1
    else:
        job.drops += 1
    move(job, S.LOST, f"requeue ({kind})", out, attempt=attempt,
         details={"agent": None, "preemptions": job.preemptions, "losses": job.losses})
    job.attempt += 1
    job.agent_id = None
    job.kill_cause = None
    job.kill_sent_at = None
    job.kept_for_notice = False
    job.queued_at = now
    if agent_id is not None:
        book.health.agent_busy(agent_id, now)
    move(job, S.QUEUED, "requeue", out)
    out.append(rec.JobRequeued(job.job_id, old_task, job.mesos_task_id, agent_id, cause, kind, job.preemptions,
                               job.losses, detail))
    if job.needs_reliable and not was_reliable:
        out.append(rec.JobEscalated(job.job_id, job.preemptions, job.preempt.max_preemptions))
    if job.job_store_id:  # its killed attempt may have committed the job: ask before running it again
        job.awaiting_job_store = True
        out.append(cmd.CheckJobStore(job.job_id, job.job_store_id, "gone"))
