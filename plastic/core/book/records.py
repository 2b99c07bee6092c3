"""Records: what the JobBook (plastic.core.book.jobbook) says happened, typed, in the past tense.

Each record has a ``kind`` (the name it has in the decisions log, the run's Redis event stream and
the report) and ``fields`` (its values by name, the same names everywhere).  The shell stores them
as they are: every record goes to the decisions log and the run's event stream; two of them also
change the run's records in Redis, exactly as the book decided:

- TaskStateChanged: a task record moves ``from_state`` -> ``to_state`` (a compare-and-set in Redis),
  setting ``details``, keeping ``attempt`` (an attempt that ended with this move) and, when the
  book says so, a runtime sample of the task's tool;
- AgentStateChanged: an agent record moves (ACTIVE -> DRAINING at a terminate notice, -> GONE);
- and JobQueued adds the task record, AgentUpdated writes the agent record.

Times in records are the book's (seconds on its clock) or durations; the shell stamps wall-clock
times on what it stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from plastic.core.book.lifecycle import AgentState, AttemptOutcome, TaskState
from plastic.core.model import TaskUsage


@dataclass(frozen=True, slots=True)
class Record:
    """Base of every record: ``kind`` names it, ``fields`` gives its values by name."""

    kind: ClassVar[str] = "record"

    @property
    def fields(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, AttemptEnded | TaskUsage):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


# ------------------------------------------------------------------ the run's records in Redis


@dataclass(frozen=True, slots=True)
class AttemptEnded:
    """An attempt that ended: how, where, and how long it ran (from its start, or its launch if it
    never started, to its end)."""

    number: int
    outcome: AttemptOutcome
    agent_id: str | None
    cluster: str | None
    mesos_task_id: str
    ran_s: float
    reason: str | None = None
    exit_code: int | None = None
    notice_age_s: float | None = None  # its agent's terminate notice came this long before the end
    wall_time_s: float | None = None  # of an end (as Toil is told)
    counted_as: str | None = None  # of a requeue: preempted / lost / dropped
    usage: TaskUsage | None = None  # what its processes used (plastic's executor)


@dataclass(frozen=True, slots=True)
class TaskStateChanged(Record):
    """A task record moves; ``from_state`` None: a previous leader's task, whatever its record says."""

    kind: ClassVar[str] = "task_state"
    job_id: str
    from_state: TaskState | None
    to_state: TaskState
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)
    attempt: AttemptEnded | None = None
    tool: str | None = None
    runtime_s: float | None = None  # a runtime sample of ``tool`` to keep (a finished attempt)


@dataclass(frozen=True, slots=True)
class AgentStateChanged(Record):
    kind: ClassVar[str] = "agent_state"
    agent_id: str
    from_state: AgentState
    to_state: AgentState
    reason: str
    window_s: float | None = None  # of a terminate notice: the time left until the agent goes


@dataclass(frozen=True, slots=True)
class JobQueued(Record):
    kind: ClassVar[str] = "issued"
    job_id: str
    vcpus: int
    ram_mib: int
    preempt: str  # "true" / "false" / "N"
    instance_type: str | None
    tool: str | None
    name: str | None = None
    step: str | None = None
    job_store_id: str | None = None


@dataclass(frozen=True, slots=True)
class AgentUpdated(Record):
    """An agent new to the book, back after it was lost, or whose attributes changed."""

    kind: ClassVar[str] = "agent"
    agent_id: str
    preemptible: bool
    cluster: str
    instance_type: str
    vcpus: int
    ram_mib: int
    back: bool
    address: str | None = None  # "ip:port"


# ------------------------------------------------------------------ placement and the queue


@dataclass(frozen=True, slots=True)
class TaskPlaced(Record):
    kind: ClassVar[str] = "placed"
    job_id: str
    task: str
    agent_id: str
    cluster: str
    preemptible: bool
    instance_type: str
    offer_id: str
    why: str
    preemptions: int


@dataclass(frozen=True, slots=True)
class TaskStarted(Record):
    kind: ClassVar[str] = "running"
    job_id: str
    task: str
    agent_id: str | None


@dataclass(frozen=True, slots=True)
class JobEnded(Record):
    kind: ClassVar[str] = "ended"
    job_id: str
    outcome: str
    state: str
    exit_code: int
    attempt: int
    agent_id: str | None
    cluster: str | None
    preemptible: bool | None
    wall_time_s: float
    reason: str | None
    message: str | None
    usage: TaskUsage | None = None  # what its last attempt's processes used (plastic's executor)


@dataclass(frozen=True, slots=True)
class JobRequeued(Record):
    kind: ClassVar[str] = "requeue"
    job_id: str
    old_task: str
    new_task: str
    agent_id: str | None
    cause: str
    counted_as: str  # preempted / lost / dropped
    preemptions: int
    losses: int
    detail: str | None


@dataclass(frozen=True, slots=True)
class JobEscalated(Record):
    """A preempt=N job used its N preemptions: from now on reliable agents only."""

    kind: ClassVar[str] = "escalation"
    job_id: str
    preemptions: int
    budget: int | None


@dataclass(frozen=True, slots=True)
class JobUnplaceable(Record):
    kind: ClassVar[str] = "unplaceable"
    job_id: str
    reason: str
    kept_queued: bool


@dataclass(frozen=True, slots=True)
class JobPlaceableAgain(Record):
    kind: ClassVar[str] = "placeable_again"
    job_id: str


@dataclass(frozen=True, slots=True)
class OffersDeclined(Record):
    kind: ClassVar[str] = "declined"
    offer_ids: tuple[str, ...]
    refuse_seconds: float


@dataclass(frozen=True, slots=True)
class IgnoredOffersDeclined(Record):
    """Offers of agents the Toil leader asked to ignore."""

    kind: ClassVar[str] = "declined_ignored"
    offer_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OfferWithdrawn(Record):
    kind: ClassVar[str] = "rescinded"
    offer_id: str


# ------------------------------------------------------------------ kills and statuses


@dataclass(frozen=True, slots=True)
class KillSent(Record):
    kind: ClassVar[str] = "kill"
    job_id: str
    task: str
    cause: str  # leader


@dataclass(frozen=True, slots=True)
class KillIgnored(Record):
    kind: ClassVar[str] = "kill_ignored"
    job_id: str
    why: str  # unknown / ended


@dataclass(frozen=True, slots=True)
class IssueRepeated(Record):
    kind: ClassVar[str] = "duplicate_issue"
    job_id: str


@dataclass(frozen=True, slots=True)
class StatusRepeated(Record):
    kind: ClassVar[str] = "duplicate_status"
    task: str
    state: str
    uuid: str


@dataclass(frozen=True, slots=True)
class StaleStatusSeen(Record):
    kind: ClassVar[str] = "stale_status"
    task: str
    state: str
    job_state: str
    current: str


@dataclass(frozen=True, slots=True)
class UnknownTaskSeen(Record):
    kind: ClassVar[str] = "unknown_task"
    task: str
    state: str


@dataclass(frozen=True, slots=True)
class UnknownStateSeen(Record):
    kind: ClassVar[str] = "unknown_state"
    task: str
    state: str


@dataclass(frozen=True, slots=True)
class JobGoneIgnored(Record):
    """A job-store answer that came too late to matter (the job is no longer queued)."""

    kind: ClassVar[str] = "job_gone_ignored"
    job_id: str
    state: str | None


# ------------------------------------------------------------------ agents and spot notices


@dataclass(frozen=True, slots=True)
class AgentGone(Record):
    kind: ClassVar[str] = "agent_lost"
    agent_id: str
    jobs: tuple[str, ...]
    duplicate: bool


@dataclass(frozen=True, slots=True)
class TerminateNoticed(Record):
    kind: ClassVar[str] = "notice"
    agent_id: str
    notice_kind: str  # terminate
    terminate_at: float
    window_s: float
    jobs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RebalanceNoticed(Record):
    kind: ClassVar[str] = "notice"
    agent_id: str
    notice_kind: str  # rebalance
    reaction: str
    jobs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NoticeRepeated(Record):
    kind: ClassVar[str] = "duplicate_notice"
    agent_id: str
    notice_kind: str


@dataclass(frozen=True, slots=True)
class LeftToFinish(Record):
    kind: ClassVar[str] = "let_finish"
    job_id: str
    agent_id: str
    estimate_s: float | None


@dataclass(frozen=True, slots=True)
class KilledForNotice(Record):
    kind: ClassVar[str] = "drain_kill"
    job_id: str
    task: str
    agent_id: str | None
    estimate_s: float | None


@dataclass(frozen=True, slots=True)
class AgentIdled(Record):
    """A burst agent without work for the idle threshold: a candidate for release."""

    kind: ClassVar[str] = "idle_agent"
    agent_id: str
    idle_s: float
    cluster: str
    instance_type: str


@dataclass(frozen=True, slots=True)
class JobStarved(Record):
    """A job queued for the starving threshold for a shape no live agent can hold."""

    kind: ClassVar[str] = "starving"
    job_id: str
    vcpus: int
    ram_mib: int
    waited_s: float
    reason: str


# ------------------------------------------------------------------ the framework and resumes


@dataclass(frozen=True, slots=True)
class FrameworkRegistered(Record):
    kind: ClassVar[str] = "registered"
    framework_id: str


@dataclass(frozen=True, slots=True)
class Resubscribed(Record):
    kind: ClassVar[str] = "reconnected"
    live: int


@dataclass(frozen=True, slots=True)
class ResumeBegan(Record):
    kind: ClassVar[str] = "resumed"
    known: tuple[str, ...]
    adopt_s: float
    framework_removed: bool


@dataclass(frozen=True, slots=True)
class OrphanAdopted(Record):
    kind: ClassVar[str] = "orphan_adopted"
    task: str
    agent_id: str | None
    state: str | None
    remaining_estimate_s: float | None


@dataclass(frozen=True, slots=True)
class OrphanKilled(Record):
    kind: ClassVar[str] = "orphan_kill"
    task: str
    agent_id: str | None
    state: str | None
    reason: str  # no_fit / adopt_window / notice / retry


@dataclass(frozen=True, slots=True)
class OrphanCheckAsked(Record):
    kind: ClassVar[str] = "orphan_check"
    task: str
    agent_id: str | None
    state: str | None
    reason: str | None
    job_store_id: str | None


@dataclass(frozen=True, slots=True)
class OrphanEnded(Record):
    kind: ClassVar[str] = "orphan_ended"
    task: str
    agent_id: str | None
    state: str | None
    adopted: bool
    reason: str | None = None  # framework_removed / job_store

    @property
    def fields(self) -> dict[str, Any]:
        out = {"task": self.task, "agent_id": self.agent_id, "state": self.state, "adopted": self.adopted}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class OrphanUnknown(Record):
    kind: ClassVar[str] = "orphan_unknown"
    task: str
    agent_id: str | None
