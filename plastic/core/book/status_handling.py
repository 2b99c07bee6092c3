"""A task's status update in the JobBook (plastic.core.book.jobbook), pure: acknowledged once recorded
(again when repeated: the first ack may have been lost), handed to the orphans after a resume, a
zombie of an old attempt killed, and for a live task its state moved, its job ended or requeued."""

from __future__ import annotations

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book import records as rec
from plastic.core.book.decisions import Output
from plastic.core.book.endings import end_job, move, requeue_job
from plastic.core.book.jobs import EXIT_UNKNOWN, LIVE, TERMINAL_STATES, Job, exit_code_of, loss_cause, split_task_id
from plastic.core.book.lifecycle import JobOutcome, TaskState
from plastic.core.book.state import BookState

S = TaskState


def status_received(book: BookState, ev: evt.StatusReceived, now: float, out: list[Output]) -> None:
    ack = [cmd.Acknowledge(ev.agent_id, ev.mesos_task_id, ev.uuid)] if ev.uuid else []
    if ev.uuid and ev.uuid in book.seen_uuids:
        out.append(rec.StatusRepeated(ev.mesos_task_id, ev.state, ev.uuid))
        out.extend(ack)  # the first ack may have been lost: acknowledge again, change nothing
        return
    if ev.uuid:
        book.seen_uuids.add(ev.uuid)
    parsed = split_task_id(ev.mesos_task_id)
    job = book.jobs.get(parsed[0]) if parsed else None
    if job is None and book.orphans is not None:
        out.extend(book.orphans.status(ev.mesos_task_id, ev.state, ev.agent_id, now,
                                       book.notices.deadline(ev.agent_id)).commands())
    elif job is None:
        out.append(rec.UnknownTaskSeen(ev.mesos_task_id, ev.state))
    elif parsed[1] != job.attempt or job.state not in LIVE:
        out.append(rec.StaleStatusSeen(ev.mesos_task_id, ev.state, str(job.state), job.mesos_task_id))
        if ev.state not in TERMINAL_STATES and ev.state != "TASK_KILLING":
            out.append(cmd.KillTask(ev.mesos_task_id, ev.agent_id))  # a zombie of an old attempt
    else:
        _live_status(book, job, ev, now, out)
    out.extend(ack)  # only after the book recorded the update


def _live_status(book: BookState, job: Job, ev: evt.StatusReceived, now: float, out: list[Output]) -> None:
    st, cur = ev.state, job.current
    if cur is not None and ev.usage is not None:
        cur.usage = ev.usage
    if st in ("TASK_STAGING", "TASK_STARTING"):
        if job.state is S.LAUNCHING:
            move(job, S.STARTING, "starting", out)
    elif st == "TASK_RUNNING":
        if job.state in (S.LAUNCHING, S.STARTING):
            move(job, S.RUNNING, "running", out)
        if cur is not None and cur.started_at is None:
            cur.started_at = now
            out.append(rec.TaskStarted(job.job_id, job.mesos_task_id, job.agent_id))
    elif st == "TASK_KILLING":
        pass  # a kill in progress (ours, or a drain's); TASK_KILLED decides
    elif st == "TASK_FINISHED":
        code = ev.exit_code if ev.exit_code is not None else 0
        end_job(book, job, S.FINISHED, JobOutcome.FINISHED, code, now, out, ev.reason, ev.message)
    elif (cause := loss_cause(st, ev.reason, job.kill_cause)) and (st != "TASK_KILLED" or job.kill_cause != "leader"):
        requeue_job(book, job, cause, now, out, detail=ev.message if st == "TASK_KILLED" else ev.reason)
    elif st in ("TASK_FAILED", "TASK_ERROR"):
        code = ev.exit_code if ev.exit_code is not None else exit_code_of(ev.message)
        end_job(book, job, S.FAILED, JobOutcome.FAILED, EXIT_UNKNOWN if code is None else code, now, out,
                ev.reason, ev.message)
    elif st == "TASK_KILLED":
        if job.kill_cause == "leader":
            end_job(book, job, S.KILLED, JobOutcome.KILLED, EXIT_UNKNOWN, now, out, ev.reason, ev.message)
        else:  # killed by someone else: a failure for Toil to retry with its own budget
            code = ev.exit_code if ev.exit_code is not None else exit_code_of(ev.message)
            end_job(book, job, S.FAILED, JobOutcome.FAILED, EXIT_UNKNOWN if code is None else code, now, out,
                    ev.reason or "killed by someone else", ev.message)
    else:
        out.append(rec.UnknownStateSeen(ev.mesos_task_id, st))
