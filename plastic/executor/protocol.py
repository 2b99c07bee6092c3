"""The Mesos v1 executor API as plastic's executor reads and writes it (JSON), and the environment
an agent gives every executor.  Translations only: the book (plastic.core.executor.book) decides.

What a task runs: the framework puts the task's CommandInfo, as JSON, in TaskInfo.data (a TaskInfo
with an executor may not carry a command of its own), under the key ``command``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plastic.core.errors import InputError
from plastic.core.executor.book import ExecutorSettings
from plastic.core.executor.messages import (
    Acknowledged,
    ExecutorEvent,
    KillReceived,
    LaunchReceived,
    SendUpdate,
    ShutdownReceived,
    Subscribed,
)
from plastic.core.executor.share import EXECUTOR_CPUS, EXECUTOR_RAM_MIB
from plastic.core.model import TaskUsage

USAGE_KEY = "plastic_usage"
_UNITS_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "secs": 1.0, "mins": 60.0, "hrs": 3600.0, "days": 86400.0,
            "weeks": 604800.0}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z]+)\s*$")


class ExecutorEnvironmentError(InputError):
    """The agent's environment lacks what an executor needs, or has it in a form it cannot read."""


@dataclass(frozen=True, slots=True)
class ExecutorEnvironment:
    agent_endpoint: str  # host:port
    framework_id: str
    executor_id: str
    directory: str
    agent_id: str | None
    settings: ExecutorSettings


def duration_s(text: str, name: str) -> float:
    """A stout Duration as the agent writes it (`15mins`, `2secs`, `500ms`) in seconds."""
    m = _DURATION.match(text)
    if not m or m.group(2) not in _UNITS_S:
        raise ExecutorEnvironmentError(f"{text!r} is not a duration (like 15mins, 2secs, 500ms)", field=name)
    return float(m.group(1)) * _UNITS_S[m.group(2)]


def environment_of(env: Mapping[str, str], *, idle_s: float, kill_grace_s: float) -> ExecutorEnvironment:
    missing = [k for k in ("MESOS_AGENT_ENDPOINT", "MESOS_FRAMEWORK_ID", "MESOS_EXECUTOR_ID", "MESOS_DIRECTORY")
               if not env.get(k)]
    if missing:
        raise ExecutorEnvironmentError(f"not started by a Mesos agent: {', '.join(missing)} not set",
                                       field=missing[0])
    settings = ExecutorSettings(
        checkpoint=env.get("MESOS_CHECKPOINT", "0").strip().lower() in ("1", "true"),
        recovery_timeout_s=duration_s(env.get("MESOS_RECOVERY_TIMEOUT", "15mins"), "MESOS_RECOVERY_TIMEOUT"),
        subscription_backoff_max_s=duration_s(env.get("MESOS_SUBSCRIPTION_BACKOFF_MAX", "2secs"),
                                              "MESOS_SUBSCRIPTION_BACKOFF_MAX"),
        shutdown_grace_s=duration_s(env.get("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", "5secs"),
                                    "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD"),
        idle_s=idle_s, kill_grace_s=kill_grace_s)
    return ExecutorEnvironment(env["MESOS_AGENT_ENDPOINT"], env["MESOS_FRAMEWORK_ID"], env["MESOS_EXECUTOR_ID"],
                               env["MESOS_DIRECTORY"], env.get("MESOS_SLAVE_ID") or env.get("MESOS_AGENT_ID"),
                               settings)


def grace_of(kill_policy: Any) -> float | None:
    """KillPolicy.grace_period (DurationInfo: nanoseconds) in seconds."""
    if not isinstance(kill_policy, Mapping) or not isinstance(kill_policy.get("grace_period"), Mapping):
        return None
    try:
        return max(0.0, float(kill_policy["grace_period"].get("nanoseconds", 0)) / 1e9)
    except (TypeError, ValueError):
        return None


def command_of(task: Mapping[str, Any]) -> dict[str, Any]:
    """The CommandInfo a task runs: TaskInfo.command, else the one in TaskInfo.data."""
    if isinstance(task.get("command"), Mapping):
        return dict(task["command"])
    try:
        doc = json.loads(base64.b64decode(task.get("data") or "", validate=True) or b"{}")
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"the task's data is not the JSON of a command: {exc}") from exc
    command = doc.get("command") if isinstance(doc, dict) else None
    if not isinstance(command, dict) or not isinstance(command.get("value"), str):
        raise ValueError("the task names no command (TaskInfo.data has no command.value)")
    return command


def task_data(command: Mapping[str, Any]) -> str:
    """TaskInfo.data (base64, as JSON carries bytes) holding a task's CommandInfo."""
    return base64.b64encode(json.dumps({"command": dict(command)}, separators=(",", ":")).encode()).decode()


def event_of(event: Mapping[str, Any], now: float) -> tuple[ExecutorEvent | None, dict[str, Any] | None]:
    """(the book's event, the TaskInfo for a LAUNCH) of one event of the stream; (None, None) for those the
    book does not take (HEARTBEAT, MESSAGE, ERROR: the shell logs them)."""
    kind = event.get("type")
    if kind == "SUBSCRIBED":
        return Subscribed(now), None
    if kind == "LAUNCH":
        task = (event.get("launch") or {}).get("task") or {}
        task_id = (task.get("task_id") or {}).get("value", "")
        return LaunchReceived(task_id, now, grace_s=grace_of(task.get("kill_policy"))), task
    if kind == "KILL":
        kill = event.get("kill") or {}
        return KillReceived((kill.get("task_id") or {}).get("value", ""), now,
                            grace_s=grace_of(kill.get("kill_policy"))), None
    if kind == "ACKNOWLEDGED":
        ack = event.get("acknowledged") or {}
        return Acknowledged((ack.get("task_id") or {}).get("value", ""),
                            base64.b64decode(ack.get("uuid") or ""), now), None
    if kind == "SHUTDOWN":
        return ShutdownReceived(now), None
    return None, None


def status_of(update: SendUpdate, env: ExecutorEnvironment) -> dict[str, Any]:
    status: dict[str, Any] = {
        "task_id": {"value": update.task_id}, "state": update.state, "source": "SOURCE_EXECUTOR",
        "uuid": base64.b64encode(update.uuid).decode(), "timestamp": update.timestamp,
        "executor_id": {"value": env.executor_id},
    }
    if env.agent_id:
        status["agent_id"] = {"value": env.agent_id}
    if update.message:
        status["message"] = update.message
    if update.reason:
        status["reason"] = update.reason
    if update.usage is not None:
        usage = {"cpu_s": round(update.usage.cpu_s, 4), "max_rss_mib": round(update.usage.max_rss_mib, 3),
                 "wall_s": round(update.usage.wall_s, 4)}
        status["data"] = base64.b64encode(json.dumps({USAGE_KEY: usage}).encode()).decode()
    return status


def call(kind: str, env: ExecutorEnvironment, body: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"type": kind, "framework_id": {"value": env.framework_id},
                           "executor_id": {"value": env.executor_id}}
    if body is not None:
        doc[kind.lower()] = body
    return doc


def update_call(update: SendUpdate, env: ExecutorEnvironment) -> dict[str, Any]:
    return call("UPDATE", env, {"status": status_of(update, env)})


def subscribe_call(tasks: list[dict[str, Any]], updates: list[SendUpdate], env: ExecutorEnvironment) -> dict[str, Any]:
    return call("SUBSCRIBE", env, {"unacknowledged_tasks": tasks,
                                   "unacknowledged_updates": [{"status": status_of(u, env)} for u in updates]})


def usage_of(status: Mapping[str, Any]) -> TaskUsage | None:
    """The usage plastic's executor put on a terminal update (TaskStatus.data), if any."""
    data = status.get("data")
    if not data:
        return None
    try:
        doc = json.loads(base64.b64decode(data))
    except (binascii.Error, ValueError):
        return None
    usage = doc.get(USAGE_KEY) if isinstance(doc, dict) else None
    if not isinstance(usage, dict):
        return None
    try:
        return TaskUsage(float(usage["cpu_s"]), float(usage["max_rss_mib"]), float(usage["wall_s"]))
    except (KeyError, TypeError, ValueError):
        return None


def executor_info(executor_id: str, command: str, *, name: str = "plastic executor") -> dict[str, Any]:
    """The ExecutorInfo of plastic's executor: the same for every task a framework places on an agent."""
    return {"executor_id": {"value": executor_id}, "type": "CUSTOM", "name": name,
            "command": {"value": command, "shell": True},
            "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": EXECUTOR_CPUS}},
                          {"name": "mem", "type": "SCALAR", "scalar": {"value": EXECUTOR_RAM_MIB}}]}


def executor_ids_of(offer: Mapping[str, Any]) -> list[str]:
    return [e.get("value", "") for e in offer.get("executor_ids") or () if isinstance(e, Mapping)]
