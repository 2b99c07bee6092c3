"""The TaskInfos of one launch: what each task runs and how (plastic's executor or Mesos' command
executor), and the resources it declares.

With plastic's executor (the default) every task names the same ExecutorInfo (executor id
``plastic``), carries its command in TaskInfo.data, and the tasks of a launch that starts the
executor on an agent give it its share (plastic.core.executor.share).  With the command executor
(``--executor command``, for agents without plastic) each task carries its command as it is.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from plastic.core.executor.share import TaskShare, fit_launch
from plastic.executor.protocol import executor_info, task_data

ExecutorKind = Literal["plastic", "command"]
EXECUTOR_KINDS: tuple[str, ...] = ("plastic", "command")
EXECUTOR_ENV = "PLASTIC_EXECUTOR"  # plastic | command: what `plastic run --executor` passes to the leader
EXECUTOR_COMMAND_ENV = "PLASTIC_EXECUTOR_COMMAND"  # how agents start plastic's executor
EXECUTOR_ID = "plastic"
IMAGE_BIN = "/opt/plastic/bin"  # where plastic's images (deploy/plastic/Dockerfile) install it


def executor_kind_from_env(environ: Mapping[str, str] | None = None) -> ExecutorKind:
    value = (environ if environ is not None else os.environ).get(EXECUTOR_ENV, "plastic").strip().lower()
    return "command" if value == "command" else "plastic"


def default_executor_command(environ: Mapping[str, str] | None = None) -> str:
    """This interpreter's `-m plastic.executor` where the agent has it (agents run tasks with plastic at
    the leader's paths, as they run `_toil_worker`), else `plastic executor` from the agent's PATH (a
    leader outside the cluster's image, e.g. on the host of the compose cluster); $PLASTIC_EXECUTOR_COMMAND
    says otherwise.  `exec`: no shell is left waiting."""
    given = (environ if environ is not None else os.environ).get(EXECUTOR_COMMAND_ENV, "").strip()
    python = shlex.quote(sys.executable)
    # (a Mesos agent gives executors a PATH of its own, without plastic's images' /opt/plastic/bin)
    return given or (f"if [ -x {python} ]; then exec {python} -m plastic.executor; "
                     f"else PATH=\"$PATH:{IMAGE_BIN}\" exec plastic executor; fi")


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """One task of a launch, as the adapter knows it."""

    name: str
    task_id: str
    agent_id: str
    cpus: float
    ram_mib: float
    command: str
    environment: Mapping[str, str]
    labels: Sequence[tuple[str, str]]


class TaskInfoBuilder:
    def __init__(self, kind: ExecutorKind = "plastic", executor_command: str | None = None):
        self.kind = kind
        self.executor = executor_info(EXECUTOR_ID, executor_command or default_executor_command())

    def infos(self, tasks: Sequence[LaunchSpec], offer: Mapping[str, Any],
              offered: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The TaskInfos for `tasks` placed on `offer` (offered: its resources by name, roles kept)."""
        shares = [TaskShare(t.cpus, t.ram_mib) for t in tasks]
        starts = self.kind == "plastic" and EXECUTOR_ID not in [e.get("value") for e in offer.get("executor_ids") or ()]
        shares = fit_launch(_amount(offered, "cpus"), _amount(offered, "mem"), shares, starts)
        return [self._info(t, s, offered) for t, s in zip(tasks, shares, strict=True)]

    def _info(self, task: LaunchSpec, share: TaskShare, offered: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        command = {"value": task.command, "shell": True,
                   "environment": {"variables": [{"name": k, "value": str(v)} for k, v in task.environment.items()]}}
        info: dict[str, Any] = {
            "name": task.name, "task_id": {"value": task.task_id}, "agent_id": {"value": task.agent_id},
            "resources": [_scalar(offered, "cpus", share.cpus), _scalar(offered, "mem", share.ram_mib)],
            "labels": {"labels": [{"key": k, "value": v} for k, v in task.labels]},
        }
        if self.kind == "plastic":
            info["executor"] = self.executor
            info["data"] = task_data(command)
        else:
            info["command"] = command
        return info


def _amount(offered: Mapping[str, Mapping[str, Any]], name: str) -> float:
    try:
        return float(offered[name]["scalar"]["value"])
    except (KeyError, TypeError, ValueError):
        return 0.0


def _scalar(offered: Mapping[str, Mapping[str, Any]], name: str, amount: float) -> dict[str, Any]:
    r: dict[str, Any] = {"name": name, "type": "SCALAR", "scalar": {"value": float(amount)}}
    src = offered.get(name)
    if src is not None:  # keep the offer's role / allocation info
        for key in ("role", "allocation_info", "reservations"):
            if key in src:
                r[key] = src[key]
    return r
