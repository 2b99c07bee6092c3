"""Events (past tense, in) and commands (imperative, out) of the JobBook (plastic/core/jobbook.py).

All frozen dataclasses of plain values; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from plastic.core.model import Preempt, Resources
from plastic.core.placement import (  # commands shared with placement
    AgentInfo,
    Offer,
    ReviveOffers,
    SuppressOffers,
)

# ------------------------------------------------------------------ events


@dataclass(frozen=True, slots=True)
class JobIssued:
    job_id: str
    demand: Resources
    preempt: Preempt
    instance_type: str | None = None
    tool: str | None = None


@dataclass(frozen=True, slots=True)
class KillRequested:
    """The Toil leader asked for the job to be killed (killBatchJobs)."""

    job_id: str


@dataclass(frozen=True, slots=True)
class OffersReceived:
    offers: tuple[Offer, ...]


@dataclass(frozen=True, slots=True)
class OfferRescinded:
    offer_id: str


@dataclass(frozen=True, slots=True)
class StatusReceived:
    """A Mesos UPDATE (or a reconciliation answer: no uuid, nothing to acknowledge)."""

    mesos_task_id: str
    state: str  # TASK_RUNNING, TASK_FINISHED, ...
    reason: str | None = None  # REASON_AGENT_DRAINING, ...
    message: str | None = None
    agent_id: str | None = None
    uuid: str | None = None
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class AgentSeen:
    agent: AgentInfo


@dataclass(frozen=True, slots=True)
class AgentLost:
    """A FAILURE event with only an agent id (slaveLost)."""

    agent_id: str


NoticeKind = Literal["terminate", "rebalance"]


@dataclass(frozen=True, slots=True)
class NoticeReceived:
    """A spot notice about an agent.  terminate: the agent is gone at ``terminate_at`` (book time);
    rebalance: a recommendation, ``terminate_at`` is when it was made (not a deadline)."""

    agent_id: str
    terminate_at: float
    kind: NoticeKind = "terminate"


@dataclass(frozen=True, slots=True)
class Reconnected:
    """The driver subscribed again (failover or reconnection)."""


@dataclass(frozen=True, slots=True)
class KnownTask:
    """A task of a previous leader incarnation the run's records show live: its tool and how long
    it had been running when the resume began (None: not running yet or not recorded)."""

    task_id: str
    agent_id: str | None = None
    tool: str | None = None
    running_s: float | None = None
    job_store_id: str | None = None  # Toil's id of its job: the job store says whether it finished


@dataclass(frozen=True, slots=True)
class Resumed:
    """A new leader incarnation took the framework over (plastic run --resume): ``known`` are the
    tasks the run's records show live; every task no job of this book owns is from now on an
    orphan (plastic.core.orphans): reconciled, adopted when it can finish within the book's
    adopt window, killed otherwise.  ``framework_removed``: the master had removed the framework
    (its failover timeout ran out) and so killed all its tasks; the new leader subscribed anew."""

    known: tuple[KnownTask, ...] = ()
    framework_removed: bool = False


@dataclass(frozen=True, slots=True)
class OrphanChecked:
    """The shell's answer to an ``orphan_check`` record: whether the job store holds the orphan's
    work (its job is gone from the store or its body has run)."""

    task_id: str
    committed: bool


@dataclass(frozen=True, slots=True)
class JobGone:
    """The job's work is already in the job store: an attempt killed or lost on its way out had
    committed it (the shell checks the job store when a job is requeued)."""

    job_id: str


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed (the adapter sends one every few seconds)."""


Event = (JobIssued | KillRequested | OffersReceived | OfferRescinded | StatusReceived | AgentSeen
         | AgentLost | NoticeReceived | Reconnected | Resumed | OrphanChecked | JobGone | Tick)

# ---------------------------------------------------------------- commands


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
    """Explicit reconciliation: (mesos_task_id, agent_id) pairs."""

    tasks: tuple[tuple[str, str | None], ...]


Outcome = Literal["finished", "failed", "killed", "lost_for_good"]


@dataclass(frozen=True, slots=True)
class JobEnded:
    """Exactly once per job; the Toil plugin turns it into UpdatedBatchJobInfo."""

    job_id: str
    outcome: Outcome
    exit_code: int
    wall_time_s: float
    mesos_task_id: str | None = None  # the last attempt's (Toil's backing_id)
    reason: str | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Record:
    """Something for Redis / the JSON-lines log (placed, declined, notice, requeue, escalation, ...)."""

    kind: str
    fields: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReportUnplaceable:
    job_id: str
    reason: str


Command = (LaunchTasks | DeclineOffers | KillTask | Acknowledge | ReviveOffers | SuppressOffers | Reconcile
           | JobEnded | Record | ReportUnplaceable)
