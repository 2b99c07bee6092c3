"""The world of bench/elastic_sim.py: its tasks, nodes and results, and the rules the world keeps.

`SimWorld` holds what the simulated cloud and workflow engine do that no policy decides: how long a
spot notice gives and how much of it a task must leave, the minimum charge of a node, whether the
nodes a run starts with boot on its clock, how interruptions are drawn, how long the engine takes to
issue a task once its parents end, and the steps and runtime estimates a controller is told.  Its
defaults are the full-scale simulation's (EC2's 120 s notice and 60 s minimum, interruptions by band,
tasks issued at once, the trace's runtimes as estimates); bench/elastic_twin.py sets them to what a
local replay through `plastic run` measured, to simulate that replay's own world.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from plastic.core.elastic.model import NodeState
from plastic.core.model import Market, NodeShape, TaskSpec
from plastic.core.planning.plan import PlannedNode

NOTICE_S = 120.0
NOTICE_MARGIN_S = 30.0
MIN_BILLED_S = 60.0
REFERENCE_RISK = 0.15  # a band with this middle is interrupted rate_per_hour times an hour


@dataclass
class SimTask:
    spec: TaskSpec
    waiting_parents: int
    children: list[str] = field(default_factory=list)
    state: str = "waiting"  # waiting / queued / running / done
    node: str | None = None
    started_at: float = 0.0
    attempt: int = 0
    preemptions: int = 0
    queued_at: float = 0.0

    @property
    def runtime_s(self) -> float:
        return max(self.spec.runtime_s or 1.0, 0.001)

    @property
    def needs_reliable(self) -> bool:
        limit = self.spec.preempt.max_preemptions
        return limit == 0 or (limit is not None and self.preemptions >= limit)


@dataclass
class SimNode:
    node_id: str
    shape: NodeShape
    cluster: str
    created_at: float
    ready_at: float
    state: NodeState = NodeState.PENDING
    ended_at: float | None = None
    tasks: set[str] = field(default_factory=set)
    used_vcpus: int = 0
    used_ram_mib: int = 0
    idle_since: float | None = None
    cordoned: bool = False
    noticed_at: float | None = None
    released: bool = False
    notice_window_s: float | None = None  # its notice's window, when the world gives one (SimWorld.notices)
    # where its money goes (Simulation._account): vCPU-seconds of tasks that finished or were thrown away
    # by a preemption, and the seconds with at least one task on it, up to ``mark``
    mark: float = 0.0
    done_vcpu_s: float = 0.0
    lost_vcpu_s: float = 0.0
    occupied_s: float = 0.0

    @property
    def spot(self) -> bool:
        return self.shape.market is Market.SPOT

    @property
    def takes_work(self) -> bool:
        return self.state is NodeState.READY and not self.cordoned and self.noticed_at is None

    def cost_usd(self, end: float, min_billed_s: float = MIN_BILLED_S) -> float:
        stop = self.ended_at if self.ended_at is not None else end
        return self.shape.usd_per_hour * max(stop - self.created_at, min_billed_s) / 3600.0

    def spend_usd(self, min_billed_s: float = MIN_BILLED_S) -> dict[str, float]:
        """Its cost taken apart (the node ended): boot (from its creation to its being up); the vCPU-seconds
        of tasks that finished (work) or were thrown away (lost); the vCPUs left unused while some task ran
        (partial); ready with no task (empty); the rest of the minimum charge (minimum).  The parts add up
        to cost_usd."""
        life = (self.ended_at or self.created_at) - self.created_at
        boot = min(life, max(self.ready_at - self.created_at, 0.0))
        usd_per_s = self.shape.usd_per_hour / 3600.0
        vcpus = self.shape.usable.vcpus
        work, lost = self.done_vcpu_s / vcpus, self.lost_vcpu_s / vcpus
        return {"boot": usd_per_s * boot, "work": usd_per_s * work, "lost": usd_per_s * lost,
                "partial": usd_per_s * (self.occupied_s - work - lost),
                "empty": usd_per_s * (life - boot - self.occupied_s),
                "minimum": usd_per_s * max(min_billed_s - life, 0.0)}


@dataclass(frozen=True)
class SimResult:
    policy: str
    interruptions_on: bool
    usd: float
    makespan_s: float
    node_hours: float
    completion: float
    interruptions: int
    preemptions: int
    peak_nodes: int
    nodes_bought: int
    # where the money went (SimNode.spend_usd): "reliable <part>" and "spot <part>" -> USD
    spend_usd: dict[str, float] = field(default_factory=dict)


def trace_step(task_id: str) -> str:
    """A WfCommons task's step: its name without its number ("fasterq-dump_ID0000003", "mProject_00000002")."""
    return re.sub(r"_(ID)?\d+$", "", task_id)


@dataclass(frozen=True)
class SimWorld:
    """What the world does, whatever the policy (the module docstring); the defaults are EC2's, at the
    trace's own runtimes."""

    notice_s: float = NOTICE_S  # a spot interruption's notice
    margin_s: float = NOTICE_MARGIN_S  # at the notice, a task that cannot end this long before the end stops
    min_billed_s: float = MIN_BILLED_S  # a node is paid for this long at least
    # the nodes a run starts with are up after this (None: the boot of every node); 0: up at the start,
    # paid from it (a local run's first agents boot before its clock starts)
    first_boot_s: float | None = None
    by_band: bool = True  # interruptions at rate_per_hour x band risk / 15%; False: rate_per_hour on every spot node
    # the interruptions themselves, in place of the rate's draws: node ordinal (0: the first node bought)
    # -> (seconds after it is up that its notice is heard, seconds from then to its end); others: none
    notices: Mapping[int, tuple[float, float]] | None = None
    issue_lag_s: Mapping[str, float] = field(default_factory=dict)  # task -> queued this long after its parents end
    end_lag_s: float = 0.0  # the run ends this long after its last task (the nodes still up are paid to then)
    # the policy starts this long after the run (plastic's controller starts with Toil's batch system, once
    # the leader is up): it looks first a look interval later, and not at all before
    policy_starts_s: float = 0.0
    step: Callable[[str], str] = trace_step  # a task's step, as the controller is told it
    estimates_s: Mapping[str, float] | None = None  # task -> the controller's estimate (None: its runtime)
    first_nodes: Sequence[PlannedNode] | None = None  # the nodes a run starts with (None: the policy's own)
