"""Events: what the JobBook (plastic.core.book.jobbook) is told happened, in the past tense.

Frozen dataclasses of plain values.  The shell turns the outside world into these (driver callbacks,
the Toil leader's calls, notices from Redis, answers to the book's own questions) and nothing else
reaches the book, so a run can be replayed from its decisions log (plastic.core.codec).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from plastic.core.book.placement import AgentInfo, Offer
from plastic.core.model import Preempt, Resources, TaskUsage


@dataclass(frozen=True, slots=True)
class JobIssued:
    """The Toil leader issued a job; ``name``, ``step`` and ``job_store_id`` are kept for the records
    (``job_store_id``, Toil's id of the job, stable across leaders, is what the job store is asked about)."""

    job_id: str
    demand: Resources
    preempt: Preempt
    instance_type: str | None = None
    tool: str | None = None
    name: str | None = None
    step: str | None = None
    job_store_id: str | None = None


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
    usage: TaskUsage | None = None  # on a terminal update from plastic's executor


@dataclass(frozen=True, slots=True)
class AgentSeen:
    """An agent the master listed (GET_AGENTS) before it offered anything."""

    agent: AgentInfo


@dataclass(frozen=True, slots=True)
class AgentLost:
    """A FAILURE event with only an agent id (slaveLost)."""

    agent_id: str


@dataclass(frozen=True, slots=True)
class AgentsIgnored:
    """The Toil leader asked that these agents take no new work (``ignored``), or take it again."""

    agent_ids: tuple[str, ...]
    ignored: bool = True


NoticeKind = Literal["terminate", "rebalance"]


@dataclass(frozen=True, slots=True)
class NoticeReceived:
    """A spot notice about an agent.  terminate: the agent is gone at ``terminate_at`` (book time);
    rebalance: a recommendation, ``terminate_at`` is when it was made (not a deadline)."""

    agent_id: str
    terminate_at: float
    kind: NoticeKind = "terminate"


@dataclass(frozen=True, slots=True)
class Registered:
    """The master accepted the subscription (SUBSCRIBED) under this framework id."""

    framework_id: str


@dataclass(frozen=True, slots=True)
class Reconnected:
    """The driver subscribed again (failover or reconnection)."""


@dataclass(frozen=True, slots=True)
class PriorTask:
    """A task record a previous leader incarnation left in the run's records (Redis): its record id
    (the old job id), record state, Mesos task id, agent, tool, jobStoreID, and how long ago it
    entered that state (seconds, on the records' clock)."""

    record_id: str
    state: str
    mesos_task_id: str | None = None
    agent_id: str | None = None
    tool: str | None = None
    job_store_id: str | None = None
    state_age_s: float | None = None


@dataclass(frozen=True, slots=True)
class Resumed:
    """A new leader incarnation took the framework over (plastic run --resume): ``prior`` are the
    run's records of the previous leaders' unfinished tasks.  The book decides what becomes of each
    (plastic.core.book.orphans).  ``framework_removed``: the master had removed the framework (its
    failover timeout ran out) and so killed all its tasks; the new leader subscribed anew."""

    prior: tuple[PriorTask, ...] = ()
    framework_removed: bool = False


@dataclass(frozen=True, slots=True)
class JobStoreChecked:
    """The shell's answer to a CheckJobStore command: whether Toil's job store holds the work of the
    job (``key`` is the command's: a job id, or an orphan's Mesos task id)."""

    key: str
    question: str  # "gone" | "committed", as asked
    work_done: bool


@dataclass(frozen=True, slots=True)
class RuntimeHistoryLoaded:
    """The shell's answer to LoadRuntimeHistory: the tool's recorded runtimes, newest first."""

    tool: str
    seconds: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed (the adapter sends one every few seconds)."""


Event = (JobIssued | KillRequested | OffersReceived | OfferRescinded | StatusReceived | AgentSeen | AgentLost
         | AgentsIgnored | NoticeReceived | Registered | Reconnected | Resumed | JobStoreChecked
         | RuntimeHistoryLoaded | Tick)
