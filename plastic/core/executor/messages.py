"""What plastic's Mesos executor is told (events, past tense) and what it tells its shell (commands).

The executor's decisions live in plastic.core.executor.book; these are the plain values crossing the
line between that book and its shell (plastic.executor), which turns the agent's stream and the
task processes into events and carries the commands out without deciding anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from plastic.core.model import (
    TaskUsage as Usage,  # the kernel's accounting of the reaped task process
)

TERMINAL_STATES = frozenset({"TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_LOST", "TASK_ERROR",
                             "TASK_DROPPED", "TASK_GONE"})

Signal = Literal["TERM", "KILL"]


# ------------------------------------------------------------------ events

@dataclass(frozen=True, slots=True)
class Subscribed:
    """The agent answered SUBSCRIBE with SUBSCRIBED (a first subscription or a re-subscription)."""

    now: float


@dataclass(frozen=True, slots=True)
class LaunchReceived:
    """LAUNCH: a task to run (``grace_s``: its kill policy's grace period, if it has one)."""

    task_id: str
    now: float
    grace_s: float | None = None


@dataclass(frozen=True, slots=True)
class KillReceived:
    """KILL: ``grace_s`` from the event's kill policy, else the task's, else the executor's default."""

    task_id: str
    now: float
    grace_s: float | None = None


@dataclass(frozen=True, slots=True)
class ProcessStarted:
    task_id: str
    now: float


@dataclass(frozen=True, slots=True)
class ProcessFailedToStart:
    task_id: str
    message: str
    now: float


@dataclass(frozen=True, slots=True)
class ProcessExited:
    """The task's process was reaped: ``returncode`` as subprocess gives it (negative: a signal),
    ``stderr_tail`` the last line of its standard error."""

    task_id: str
    returncode: int
    now: float
    usage: Usage | None = None
    stderr_tail: str = ""


@dataclass(frozen=True, slots=True)
class UpdateAccepted:
    """The agent answered an UPDATE with 202: its status update manager holds it from now on."""

    uuid: bytes
    now: float


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """ACKNOWLEDGED: the framework acknowledged the update."""

    task_id: str
    uuid: bytes
    now: float


@dataclass(frozen=True, slots=True)
class ShutdownReceived:
    now: float


@dataclass(frozen=True, slots=True)
class ConnectionLost:
    """The subscription stream ended or broke (the agent exited or restarts)."""

    now: float


@dataclass(frozen=True, slots=True)
class Ticked:
    now: float


ExecutorEvent = (Subscribed | LaunchReceived | KillReceived | ProcessStarted | ProcessFailedToStart | ProcessExited
                 | UpdateAccepted | Acknowledged | ShutdownReceived | ConnectionLost | Ticked)


# ------------------------------------------------------------------ commands

@dataclass(frozen=True, slots=True)
class StartProcess:
    """Run the task's command (the shell holds its TaskInfo) in a process group of its own."""

    task_id: str


@dataclass(frozen=True, slots=True)
class SignalProcessGroup:
    task_id: str
    signal: Signal


@dataclass(frozen=True, slots=True)
class SendUpdate:
    """POST an UPDATE (``uuid``: 16 bytes, fresh per update; ``usage`` rides on terminal updates)."""

    task_id: str
    state: str
    uuid: bytes
    message: str | None = None
    reason: str | None = None
    usage: Usage | None = None
    timestamp: float = 0.0


@dataclass(frozen=True, slots=True)
class Resubscribe:
    """SUBSCRIBE again, naming the tasks no update of which was acknowledged and the updates not
    acknowledged (in the order they were sent), as the executor API asks."""

    unacknowledged_tasks: tuple[str, ...]
    unacknowledged_updates: tuple[SendUpdate, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Exit:
    """Leave: every task has ended (or was SIGKILLed) and nothing more can be delivered."""

    code: int
    reason: str


ExecutorCommand = StartProcess | SignalProcessGroup | SendUpdate | Resubscribe | Exit
