"""What the master's state machine asks its runtime to do (no I/O in the state machine itself)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Send:
    """Write one event on a subscription stream."""

    stream_id: str
    event: dict[str, Any]


@dataclass(slots=True)
class EndStream:
    """Finish a subscription stream (terminating chunk; the connection stays open)."""

    stream_id: str


@dataclass(slots=True)
class Launch:
    """Start a command task on an agent."""

    agent_id: str
    framework_id: str
    task_id: str
    task_info: dict[str, Any]
    container_id: str


@dataclass(slots=True)
class Kill:
    """Kill a task's process group: SIGTERM, SIGKILL after `grace_s`.

    `killing_state`: send TASK_KILLING first (the framework has TASK_KILLING_STATE).
    `silent`: the framework is gone, report nothing.
    """

    agent_id: str
    framework_id: str
    task_id: str
    reason: str | None = None
    grace_s: float = 3.0
    killing_state: bool = False
    silent: bool = False


@dataclass(slots=True)
class KillAgent:
    """The agent dies without notice to the master (a spot interruption's notice time passed)."""

    agent_id: str
    cause: str


@dataclass(slots=True)
class LaunchExecutor:
    """Start a framework's executor on an agent (its process, with the environment agents give executors)."""

    agent_id: str
    framework_id: str
    executor_id: str
    executor_info: dict[str, Any]
    container_id: str
    framework_info: dict[str, Any]


@dataclass(slots=True)
class ToExecutor:
    """Send an event (LAUNCH, KILL, ACKNOWLEDGED, SHUTDOWN) to an executor; held until it subscribes."""

    agent_id: str
    framework_id: str
    executor_id: str
    event: dict[str, Any]


Effect = Send | EndStream | Launch | Kill | KillAgent | LaunchExecutor | ToExecutor
