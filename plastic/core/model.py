"""Domain model: resources, preemption policy, tasks, instance types, catalogs.

Everything here is a frozen dataclass of plain values; nothing reads files,
clocks or the network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class TaskUsage:
    """What one task's processes used, as plastic's executor measured it when they were reaped: CPU
    seconds (user + system, with the children it waited for), the largest resident set, wall seconds."""

    cpu_s: float
    max_rss_mib: float
    wall_s: float


@dataclass(frozen=True, slots=True, order=True)
class Resources:
    """A vector of the two resources plastic packs: whole vCPUs and MiB of RAM."""

    vcpus: int
    ram_mib: int

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.vcpus + other.vcpus, self.ram_mib + other.ram_mib)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.vcpus - other.vcpus, self.ram_mib - other.ram_mib)

    def holds(self, other: Resources) -> bool:
        """True when `other` fits inside this vector in every dimension."""
        return self.vcpus >= other.vcpus and self.ram_mib >= other.ram_mib

    @property
    def nonnegative(self) -> bool:
        return self.vcpus >= 0 and self.ram_mib >= 0


ZERO = Resources(0, 0)


class Market(StrEnum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"


@dataclass(frozen=True, slots=True)
class Preempt:
    """How a task tolerates preemption.

    `max_preemptions` is None for `preempt: true` (preemptible, unlimited
    retries), 0 for `preempt: false` (reliable nodes only) and N >= 1 for an
    integer annotation: preemptible, moved to reliable nodes after N
    preemptions.
    """

    max_preemptions: int | None

    @property
    def preemptible(self) -> bool:
        return self.max_preemptions != 0

    def to_json(self) -> bool | int:
        if self.max_preemptions is None:
            return True
        if self.max_preemptions == 0:
            return False
        return self.max_preemptions

    @staticmethod
    def from_json(value: bool | int) -> Preempt:
        if value is True:
            return PREEMPTIBLE
        if value is False:
            return RELIABLE
        return Preempt(int(value))

    def __str__(self) -> str:
        v = self.to_json()
        return str(v).lower() if isinstance(v, bool) else str(v)


RELIABLE = Preempt(0)
PREEMPTIBLE = Preempt(None)


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One schedulable unit: a CWL step instance (one per scatter element) or a trace task."""

    id: str
    vcpus: int
    ram_mib: int
    preempt: Preempt = RELIABLE
    runtime_s: float | None = None
    instance_type: str | None = None
    parents: tuple[str, ...] = ()

    @property
    def demand(self) -> Resources:
        return Resources(self.vcpus, self.ram_mib)


def type_allowed(pinned: str | None, type_name: str | None) -> bool:
    """Whether a task pinned to instance type ``pinned`` (its step's instanceType; None: not pinned)
    may run on a node or shape of type ``type_name``."""
    return pinned is None or pinned == type_name


@dataclass(frozen=True, slots=True)
class InstanceType:
    name: str
    vcpus: int
    ram_mib: int
    on_demand_usd_per_hour: float
    spot_usd_per_hour: float | None = None
    spot_interruption_band: str | None = None

    @property
    def capacity(self) -> Resources:
        return Resources(self.vcpus, self.ram_mib)

    def usd_per_hour(self, market: Market) -> float | None:
        if market is Market.ON_DEMAND:
            return self.on_demand_usd_per_hour
        return self.spot_usd_per_hour


@dataclass(frozen=True, slots=True)
class Catalog:
    instance_types: tuple[InstanceType, ...]
    source: str = ""
    retrieved: str = ""
    region: str = ""

    def by_name(self, name: str) -> InstanceType | None:
        for t in self.instance_types:
            if t.name == name:
                return t
        return None


@dataclass(frozen=True, slots=True)
class Reserve:
    """Per-node resources kept for the OS and the Mesos agent (zero = raw capacity)."""

    vcpus: int = 0
    ram_mib: int = 0

    def usable(self, capacity: Resources) -> Resources:
        return Resources(capacity.vcpus - self.vcpus, capacity.ram_mib - self.ram_mib)


@dataclass(frozen=True, slots=True)
class NodeShape:
    """An instance type bought on one market, with its usable capacity after the reserve."""

    instance_type: InstanceType
    market: Market
    usable: Resources
    usd_per_hour: float

    @property
    def name(self) -> str:
        return self.instance_type.name

    @property
    def reliable(self) -> bool:
        return self.market is Market.ON_DEMAND


def node_shapes(catalog: Catalog, reserve: Reserve = Reserve()) -> tuple[NodeShape, ...]:
    """Every (type, market) that can be bought, with usable capacity after the reserve."""
    shapes: list[NodeShape] = []
    for t in catalog.instance_types:
        usable = reserve.usable(t.capacity)
        if usable.vcpus <= 0 or usable.ram_mib <= 0:
            continue
        shapes.append(NodeShape(t, Market.ON_DEMAND, usable, t.on_demand_usd_per_hour))
        if t.spot_usd_per_hour is not None:
            shapes.append(NodeShape(t, Market.SPOT, usable, t.spot_usd_per_hour))
    return tuple(shapes)


@dataclass(frozen=True, slots=True)
class Workload:
    """The tasks to plan for plus the assumptions made while reading them."""

    tasks: tuple[TaskSpec, ...]
    assumptions: tuple[str, ...] = field(default=())
    source: str = ""
