"""The elastic controller's inputs, decisions and records (plastic.core.elastic.controller), pure values.

What the controller sees at each observation: the queued tasks (shape, whether they need a reliable
node, a pinned type, how long they have waited) and the nodes (cluster, type, market, state, how much
of each is used, since when it is idle, its price).  What it decides: create nodes, cordon a node
(no new work: the first step of a release), terminate a node, each with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from plastic.core.book.records import Record
from plastic.core.model import Market, Resources


class NodeState(StrEnum):
    PENDING = "pending"  # asked for, booting: counts as capacity
    READY = "ready"  # registered with the master, takes work
    DRAINING = "draining"  # takes no new work (a terminate notice, or cordoned for release)
    INTERRUPTED = "interrupted"  # a spot interruption took it
    GONE = "gone"  # terminated or lost


LIVE_NODE_STATES = frozenset({NodeState.PENDING, NodeState.READY})


@dataclass(frozen=True, slots=True)
class WaitingTask:
    """A queued task: its shape, whether it needs a reliable (on-demand) node, its pinned type."""

    task_id: str
    demand: Resources
    needs_reliable: bool
    instance_type: str | None = None
    waited_s: float = 0.0
    due_in_s: float = 0.0  # an expected task (ClusterObserved.expected): queued in this many seconds
    runtime_s: float | None = None  # its estimate, when there is one (plastic.core.elastic.forecast)
    step: str | None = None  # the plan step it is a task of: its runtimes' spread (ClusterObserved.spreads)


@dataclass(frozen=True, slots=True)
class NodeView:
    """A node of the cluster as the provider and the framework see it."""

    node_id: str
    cluster: str
    instance_type: str
    market: Market
    state: NodeState
    capacity: Resources
    usd_per_hour: float
    created_at: float  # when it was asked for (the controller's clock)
    used: Resources = Resources(0, 0)  # by its live tasks
    running: int = 0  # live tasks on it
    idle_since: float | None = None  # no task since then (None: busy, or not ready yet)
    ended_at: float | None = None  # gone / interrupted since then
    released: bool = False  # terminated on the controller's decision (not lost)
    task_ends: tuple[tuple[float, Resources], ...] = ()  # its running tasks with an estimate: (end, demand)
    ready_at: float | None = None  # when it could take work, if known (else: when the controller sees it ready)

    @property
    def reliable(self) -> bool:
        return self.market is Market.ON_DEMAND

    @property
    def free(self) -> Resources:
        return self.capacity - self.used


DEFAULT_NODE_IDLE_S = 60.0  # a node without work this long is released (the one home of that default)


@dataclass(frozen=True, slots=True)
class ElasticPolicy:
    """Limits and rules of the controller (README: "The elastic cluster")."""

    max_nodes: int | None = None  # live nodes at most (pending + ready + draining)
    idle_s: float = DEFAULT_NODE_IDLE_S  # a node without work this long is released
    budget_usd_per_hour: float | None = None  # the live nodes' prices never add up to more
    budget_usd: float | None = None  # the whole run: no growth once the projected spend reaches it
    budget_horizon_s: float = 900.0  # projected spend = spent + hourly rate x this horizon
    hysteresis_s: float = 120.0  # a released shape is not re-created for the same work within this
    interruption_window_s: float = 600.0  # recent interruptions of a spot shape are counted over this
    max_interruptions: int = 2  # a spot shape with this many recent interruptions is avoided
    refused_for_s: float = 300.0  # a (type, market) the provider refused is avoided this long
    max_spot_refusals: int = 2  # this many spot types refused within refused_for_s: no spot until one expires
    band_weight: float = 0.5  # spot shapes are compared at price x (1 + weight x interruption risk)
    spot: bool = True  # may buy spot capacity at all
    lead_s: float = 0.0  # expected work due within this is bought for now (the nodes' boot time)
    unneeded_idle_s: float = 0.0  # with a lead: an idle node no work needs within it goes after this
    # with a lead: work may start this fraction of (boot + its runtime) later than a new node would
    # start it, rather than get a new node (plastic.core.elastic.forecast.slack_s); 0: never
    makespan_allowance: float = 0.0


# ------------------------------------------------------------------ events


@dataclass(frozen=True, slots=True)
class ClusterObserved:
    """The state of the world at one moment: queued work and every node the provider knows."""

    queued: tuple[WaitingTask, ...]
    nodes: tuple[NodeView, ...]
    expected: tuple[WaitingTask, ...] = ()  # not queued yet; forecast (plastic.core.elastic.forecast) by due_in_s
    # per step, its runtimes as equally likely values (plastic.core.elastic.spread.spread_summary)
    spreads: tuple[tuple[str, tuple[float, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class NodesCreated:
    """The provider created nodes for a CreateNodes decision (``request`` is its id)."""

    request: int
    node_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CreateRefused:
    """The provider could not create what was asked (a capacity error, as data)."""

    request: int
    instance_type: str
    market: Market
    reason: str


ElasticEvent = ClusterObserved | NodesCreated | CreateRefused

# ------------------------------------------------------------------ decisions (commands)


@dataclass(frozen=True, slots=True)
class CreateNodes:
    request: int
    cluster: str
    instance_type: str
    market: Market
    count: int
    reason: str


@dataclass(frozen=True, slots=True)
class CordonNode:
    """Stop placing work on the node (the framework ignores its offers): it is about to be released."""

    node_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class UncordonNode:
    """Place work on the node again (a cordoned node that queued work fits is kept, not released)."""

    node_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class TerminateNode:
    node_id: str
    reason: str


ElasticCommand = CreateNodes | CordonNode | UncordonNode | TerminateNode

# ------------------------------------------------------------------ records


@dataclass(frozen=True, slots=True)
class NodesRequested(Record):
    kind: ClassVar[str] = "node_requested"
    request: int
    cluster: str
    instance_type: str
    market: str
    count: int
    usd_per_hour: float  # each
    reason: str  # queued_work / replace / reliable_floor
    detail: str
    tasks: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class NodesStarted(Record):
    kind: ClassVar[str] = "node_created"
    request: int
    node_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NodeReady(Record):
    kind: ClassVar[str] = "node_ready"
    node_id: str
    cluster: str
    instance_type: str
    market: str
    boot_s: float
    seen_after_s: float = 0.0  # it was ready this long before the controller's look saw it


@dataclass(frozen=True, slots=True)
class NodeCordoned(Record):
    kind: ClassVar[str] = "node_cordoned"
    node_id: str
    idle_s: float
    cluster: str = ""
    instance_type: str = ""
    market: str = ""


@dataclass(frozen=True, slots=True)
class NodeUncordoned(Record):
    kind: ClassVar[str] = "node_uncordoned"
    node_id: str
    tasks: int  # queued tasks that fit it
    cluster: str = ""
    instance_type: str = ""
    market: str = ""


@dataclass(frozen=True, slots=True)
class NodeReleased(Record):
    kind: ClassVar[str] = "node_released"
    node_id: str
    cluster: str
    instance_type: str
    market: str
    reason: str


@dataclass(frozen=True, slots=True)
class NodeInterrupted(Record):
    kind: ClassVar[str] = "node_interrupted"
    node_id: str
    cluster: str
    instance_type: str
    market: str
    state: str  # interrupted / gone (lost without our decision)
    seen_after_s: float = 0.0  # it ended this long before the controller's look saw it


@dataclass(frozen=True, slots=True)
class CreationRefused(Record):
    kind: ClassVar[str] = "create_refused"
    request: int
    instance_type: str
    market: str
    reason: str


@dataclass(frozen=True, slots=True)
class GrowthStopped(Record):
    """Growth stopped by a limit (once each time it starts binding): budget_per_hour, budget_usd,
    max_nodes."""

    kind: ClassVar[str] = "growth_stopped"
    limit: str
    detail: str
    waiting_tasks: int


@dataclass(frozen=True, slots=True)
class CapacityError:
    """What a provider could not create, as data (never raised): the type, the market, why
    (InsufficientInstanceCapacity, ...), how many."""

    instance_type: str
    market: Market
    reason: str
    count: int = 1
