"""The JobBook's record of one Toil job and of each attempt to run it on Mesos (plastic.core.book.jobbook).

One job (a Toil batch-job id) runs as one or more attempts; attempt k has the Mesos task id
`<job_id>.<k>` (k from 1).  Task states follow plastic.core.book.lifecycle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from plastic.core.book import placement as pl
from plastic.core.book.lifecycle import TaskState
from plastic.core.model import Preempt, Resources, TaskUsage

S = TaskState
LIVE = frozenset({S.LAUNCHING, S.STARTING, S.RUNNING, S.KILLING})
ENDED = frozenset({S.FINISHED, S.FAILED, S.KILLED})

# Mesos states that mean "the infrastructure lost the task", not the task's own fault.
LOSS_STATES = frozenset({"TASK_LOST", "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR",
                         "TASK_DROPPED", "TASK_UNKNOWN"})
TERMINAL_STATES = LOSS_STATES | {"TASK_FINISHED", "TASK_FAILED", "TASK_ERROR", "TASK_KILLED"}
EXIT_UNKNOWN = 255
_EXITED = re.compile(r"exited with status (-?\d+)")


def exit_code_of(message: str | None) -> int | None:
    """N from Mesos's "Command exited with status N", else None."""
    m = _EXITED.search(message or "")
    return int(m.group(1)) if m else None


def task_id_of(job_id: str, attempt: int) -> str:
    return f"{job_id}.{attempt}"


EXECUTOR_TERMINATED = "REASON_EXECUTOR_TERMINATED"  # the executor, not the task, ended: an infrastructure loss


def loss_cause(state: str, reason: str | None, kill_cause: str | None = None) -> str | None:
    """Why an update of a live task is an infrastructure loss (requeue, no failure for Toil), or None:
    a loss state, a kill for a notice or a drain, or the executor's end (it died, shut down, or gave
    up on its agent), whether reported TASK_FAILED (by the agent) or TASK_KILLED (by the executor)."""
    if reason == EXECUTOR_TERMINATED and state in ("TASK_FAILED", "TASK_KILLED"):
        return "executor_terminated"
    if state == "TASK_KILLED":
        return "notice_kill" if kill_cause == "notice" else "agent_draining" if reason == "REASON_AGENT_DRAINING" \
            else None
    if state in LOSS_STATES:
        return "dropped" if state == "TASK_DROPPED" else state.removeprefix("TASK_").lower()
    return None


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
    usage: TaskUsage | None = None  # what it used (plastic's executor), once it ended

    @property
    def began_at(self) -> float:
        """When it started, or was launched if it never started."""
        return self.started_at if self.started_at is not None else self.launched_at

    def ran_s(self, now: float) -> float:
        """From its start (or its launch, if it never started) to ``now``."""
        return max(now - self.began_at, 0.0)


@dataclass(slots=True)
class Job:
    job_id: str
    demand: Resources
    preempt: Preempt
    instance_type: str | None
    tool: str | None
    issued_at: float
    job_store_id: str | None = None
    name: str | None = None  # the Mesos task name (Toil's display name)
    step: str | None = None  # the CWL step it runs (plastic.core.book.policy), when known
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
    awaiting_job_store: bool = False  # requeued: not placed until the job store says whether it is done
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def mesos_task_id(self) -> str:
        return task_id_of(self.job_id, self.attempt)

    @property
    def needs_reliable(self) -> bool:
        return self.pending().needs_reliable

    def pending(self, *, avoid_rebalancing: bool = False) -> pl.PendingTask:
        return pl.PendingTask(self.mesos_task_id, self.demand, self.preempt, self.preemptions,
                              self.instance_type, avoid_rebalancing)

    @property
    def current(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts and self.attempts[-1].attempt == self.attempt else None
