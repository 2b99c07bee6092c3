"""The records the local master keeps: agents, frameworks, tasks, offers and decline filters."""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from plastic.local import protocol as P
from plastic.local.config import AgentSpec
from plastic.local.resources import ResourceBag


@dataclass
class MasterOffer:
    id: str
    framework_id: str
    agent_id: str
    resources: ResourceBag


@dataclass
class Filter:
    resources: ResourceBag
    until: float


@dataclass
class Task:
    id: str
    name: str
    framework_id: str
    agent_id: str
    resources: ResourceBag
    container_id: str
    state: str = "TASK_STAGING"
    statuses: list[dict[str, Any]] = field(default_factory=list)
    pending: deque[dict[str, Any]] = field(default_factory=deque)  # head = in flight, awaiting ACK
    retry_s: float = 0.0
    retry_gen: int = 0
    unreachable_time: float | None = None
    kill_grace_s: float | None = None  # TaskInfo.kill_policy.grace_period
    executor_id: str | None = None  # run by this custom executor (None: the command executor)

    @property
    def terminal(self) -> bool:
        return self.state in P.TERMINAL_STATES


@dataclass
class RegisteredFramework:
    id: str
    info: dict[str, Any]
    registered_time: float
    reregistered_time: float
    stream_id: str | None = None
    connected: bool = False
    suppressed: bool = False
    failover_gen: int = 0
    unregistered_time: float | None = None
    offers: set[str] = field(default_factory=set)
    filters: dict[str, list[Filter]] = field(default_factory=dict)
    tasks: dict[str, Task] = field(default_factory=dict)
    unreachable: dict[str, Task] = field(default_factory=dict)
    completed: OrderedDict[str, Task] = field(default_factory=OrderedDict)

    @property
    def capabilities(self) -> set[str]:
        return {c.get("type") for c in self.info.get("capabilities", []) if isinstance(c, dict)}

    @property
    def partition_aware(self) -> bool:
        return P.PARTITION_AWARE in self.capabilities

    @property
    def failover_timeout(self) -> float:
        try:
            return max(0.0, float(self.info.get("failover_timeout", 0.0)))
        except (TypeError, ValueError):
            return 0.0


@dataclass
class Agent:
    id: str
    index: int
    spec: AgentSpec
    port: int
    total: ResourceBag
    registered_time: float
    used: ResourceBag = field(default_factory=ResourceBag)
    offered: ResourceBag = field(default_factory=ResourceBag)
    connected: bool = True  # False once dead (killed, interrupted), until the ping timeout removes it
    removed: bool = False  # removed by the master (unreachable): no longer listed
    deactivated: bool = False
    drain: dict[str, Any] | None = None  # {"state": DRAINING|DRAINED, "grace_s":..., "mark_gone":..., "since":...}
    offers: set[str] = field(default_factory=set)
    tasks: set[tuple[str, str]] = field(default_factory=set)  # (framework_id, task_id) the master holds as active
    died_at: float | None = None
    death_cause: str | None = None
    unreachable_time: float | None = None
    notice_time: float | None = None  # spot instance-action time
    rebalance_time: float | None = None
    interrupt_gen: int = 0
    imds_url: str | None = None
    executors: dict[tuple[str, str], Any] = field(default_factory=dict)  # (framework, executor id) -> record

    @property
    def available(self) -> ResourceBag:
        return (self.total - self.used - self.offered).ordered_like(self.total)

    @property
    def offerable(self) -> bool:
        return self.connected and not self.removed and not self.deactivated
