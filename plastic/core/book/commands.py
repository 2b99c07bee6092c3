"""Commands: what the JobBook (plastic.core.book.jobbook) tells the shell to do, in the imperative.

Frozen dataclasses of plain values; the shell carries each out unchanged and decides nothing.  The
book's records of what happened (for the decisions log, Redis and the report) are in
plastic.core.book.records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from plastic.core.book.lifecycle import JobOutcome
from plastic.core.book.placement import ReviveOffers, SuppressOffers
from plastic.core.model import Resources

__all__ = ["Acknowledge", "CheckJobStore", "DeclineOffers", "JobStoreQuestion", "KillTask", "LaunchTasks",
           "LoadRuntimeHistory", "Reconcile", "ReportJobEnd", "ReportUnplaceable", "ReviveOffers",
           "SuppressOffers", "TaskLaunch"]


@dataclass(frozen=True, slots=True)
class TaskLaunch:
    """One task of an ACCEPT: Mesos task id `<job_id>.<attempt>`."""

    mesos_task_id: str
    job_id: str
    attempt: int
    agent_id: str
    demand: Resources
    reason: str


@dataclass(frozen=True, slots=True)
class LaunchTasks:
    """One ACCEPT with LAUNCH operations on one offer."""

    offer_id: str
    agent_id: str
    tasks: tuple[TaskLaunch, ...]


@dataclass(frozen=True, slots=True)
class DeclineOffers:
    offer_ids: tuple[str, ...]
    refuse_seconds: float


@dataclass(frozen=True, slots=True)
class KillTask:
    mesos_task_id: str
    agent_id: str | None


@dataclass(frozen=True, slots=True)
class Acknowledge:
    agent_id: str | None
    mesos_task_id: str
    uuid: str


@dataclass(frozen=True, slots=True)
class Reconcile:
    """Explicit reconciliation: (mesos_task_id, agent_id) pairs; none: implicit (every task)."""

    tasks: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True, slots=True)
class ReportJobEnd:
    """Tell the Toil leader the job ended: exactly once per job (UpdatedBatchJobInfo)."""

    job_id: str
    outcome: JobOutcome
    exit_code: int
    wall_time_s: float
    mesos_task_id: str | None = None  # the last attempt's (Toil's backing_id)
    reason: str | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ReportUnplaceable:
    """Tell the Toil leader (its scheduling status) that no agent of the cluster can hold the job."""

    job_id: str
    reason: str


JobStoreQuestion = Literal["gone", "committed"]


@dataclass(frozen=True, slots=True)
class CheckJobStore:
    """Ask Toil's job store about a job's work and answer with JobStoreChecked(key, question, ...):
    ``gone``: the job is no longer in the store (a requeued job whose killed attempt committed it);
    ``committed``: the job is gone or its body has run (an orphan whose end said nothing)."""

    key: str  # the job id (gone) or the orphan's Mesos task id (committed)
    job_store_id: str
    question: JobStoreQuestion


@dataclass(frozen=True, slots=True)
class LoadRuntimeHistory:
    """Load the tool's recorded runtimes (Redis) and answer with RuntimeHistoryLoaded."""

    tool: str


Command = (LaunchTasks | DeclineOffers | KillTask | Acknowledge | ReviveOffers | SuppressOffers | Reconcile
           | ReportJobEnd | ReportUnplaceable | CheckJobStore | LoadRuntimeHistory)
