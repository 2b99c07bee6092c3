"""The states of runs, tasks and agents, and the one table of allowed transitions.

Every state change plastic records (in Redis, through plastic/store) is checked
against these tables; a change the table does not allow is a TransitionError
naming the record and both states.

Tasks (plastic's view of one attempt to run a workflow job on Mesos):

    QUEUED -> LAUNCHING -> STARTING -> RUNNING -> FINISHED | FAILED
                 |            |           |
                 +------------+-----------+--> KILLING -> KILLED
                 +------------+-----------+--> LOST -> QUEUED (requeued)

LOST covers everything that is not the task's own fault: a spot interruption,
an agent lost without notice, an offer that died with the connection.  It is
never terminal: the execution manager requeues the task (or gives up with
KILLED when the run is cancelled).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from plastic.core.errors import PlasticError


class TaskState(StrEnum):
    QUEUED = "QUEUED"
    LAUNCHING = "LAUNCHING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    KILLING = "KILLING"
    LOST = "LOST"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"


class JobOutcome(StrEnum):
    """How a job ended, as the Toil leader is told (once per job)."""

    FINISHED = "finished"
    FAILED = "failed"  # the task's own failure (or it could not be placed on a cluster that cannot grow)
    KILLED = "killed"  # on the leader's request
    LOST_FOR_GOOD = "lost_for_good"  # lost more often than the relaunch limit: ends FAILED


class AttemptOutcome(StrEnum):
    """How one attempt of a task ended (one record per attempt in the run's state)."""

    FINISHED = "finished"  # exit 0
    FAILED = "failed"  # the task's own failure: exit_code says which
    PREEMPTED = "preempted"  # spot interruption (a notice, or a burst agent lost): counted against preempt=N
    LOST = "lost"  # a reliable agent lost, unreachable, gone, or the launch dropped
    KILLED = "killed"  # killed on request (leader, cancel)


# How a job's last attempt ends when the job ends, and how an attempt ends when its job is requeued, by how
# the loss counts (``counted_as``: preempted / lost / dropped): the JobBook's tables (the picture of a run,
# plastic.core.account.picture, reads the attempts' ends from the records by them).
ATTEMPT_OUTCOME_OF_JOB: Mapping[JobOutcome, AttemptOutcome] = {
    JobOutcome.FINISHED: AttemptOutcome.FINISHED, JobOutcome.FAILED: AttemptOutcome.FAILED,
    JobOutcome.KILLED: AttemptOutcome.KILLED, JobOutcome.LOST_FOR_GOOD: AttemptOutcome.LOST}
ATTEMPT_OUTCOME_OF_LOSS: Mapping[str, AttemptOutcome] = {
    "preempted": AttemptOutcome.PREEMPTED, "lost": AttemptOutcome.LOST, "dropped": AttemptOutcome.LOST}


class AgentState(StrEnum):
    ACTIVE = "ACTIVE"
    DRAINING = "DRAINING"
    GONE = "GONE"


class RunState(StrEnum):
    SUBMITTED = "SUBMITTED"
    PLANNING = "PLANNING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


_T = TaskState
TASK_TRANSITIONS: Mapping[TaskState, frozenset[TaskState]] = {
    _T.QUEUED: frozenset({_T.LAUNCHING, _T.KILLED, _T.FINISHED}),  # FINISHED: done by an earlier attempt
    _T.LAUNCHING: frozenset({_T.STARTING, _T.RUNNING, _T.FINISHED, _T.FAILED, _T.KILLING, _T.KILLED, _T.LOST}),
    _T.STARTING: frozenset({_T.RUNNING, _T.FINISHED, _T.FAILED, _T.KILLING, _T.KILLED, _T.LOST}),
    _T.RUNNING: frozenset({_T.FINISHED, _T.FAILED, _T.KILLING, _T.KILLED, _T.LOST}),
    _T.KILLING: frozenset({_T.KILLED, _T.FINISHED, _T.FAILED, _T.LOST}),
    _T.LOST: frozenset({_T.QUEUED, _T.KILLED}),
    _T.FINISHED: frozenset(),
    _T.FAILED: frozenset(),
    _T.KILLED: frozenset(),
}

AGENT_TRANSITIONS: Mapping[AgentState, frozenset[AgentState]] = {
    AgentState.ACTIVE: frozenset({AgentState.DRAINING, AgentState.GONE}),
    AgentState.DRAINING: frozenset({AgentState.ACTIVE, AgentState.GONE}),
    AgentState.GONE: frozenset(),
}

_R = RunState
RUN_TRANSITIONS: Mapping[RunState, frozenset[RunState]] = {
    _R.SUBMITTED: frozenset({_R.PLANNING, _R.CANCELLED, _R.FAILED}),
    _R.PLANNING: frozenset({_R.RUNNING, _R.FAILED, _R.CANCELLED}),
    _R.RUNNING: frozenset({_R.SUCCEEDED, _R.FAILED, _R.CANCELLED}),
    _R.SUCCEEDED: frozenset(),
    _R.FAILED: frozenset(),
    _R.CANCELLED: frozenset(),
}

TABLES: Mapping[str, Mapping] = {"task": TASK_TRANSITIONS, "agent": AGENT_TRANSITIONS, "run": RUN_TRANSITIONS}


class TransitionError(PlasticError):
    """A state change the transition table does not allow (or a compare-and-set that lost)."""

    def __init__(self, kind: str, record_id: str, current: str | None, wanted: str, *, expected: str | None = None):
        if expected is not None and current != expected:
            message = f"{kind} {record_id}: expected state {expected}, found {current}; not moved to {wanted}"
        else:
            message = f"{kind} {record_id}: {current} -> {wanted} is not allowed"
        super().__init__(message, source=record_id, field="state")
        self.kind = kind
        self.record_id = record_id
        self.current = current
        self.wanted = wanted
        self.expected = expected


def allowed(kind: str, current: str, wanted: str) -> bool:
    table = TABLES[kind]
    state_type = next(iter(table)).__class__
    try:
        return state_type(wanted) in table[state_type(current)]
    except ValueError:
        return False


def check_transition(kind: str, record_id: str, current: str, wanted: str) -> None:
    if not allowed(kind, current, wanted):
        raise TransitionError(kind, record_id, current, wanted)


def is_terminal(kind: str, state: str) -> bool:
    table = TABLES[kind]
    state_type = next(iter(table)).__class__
    return not table[state_type(state)]
