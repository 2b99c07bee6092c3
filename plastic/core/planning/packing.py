"""Vector bin packing onto node shapes of different sizes, prices and markets.

The packer places tasks one by one, in the order it is given:
- onto the open node that fits the task most tightly (the seeds' "first
  suitable instance, fewest free resources first"), measured at the LP's dual
  prices so that a scarce resource counts for more;
- when no open node holds it, onto a new node whose shape a `ShapeChooser`
  picks (the seeds' cheapest-type-that-fits, or plastic's look-ahead).

Rules every placement obeys: capacity in both dimensions, reliable
(preempt=false) tasks only on on-demand nodes, pinned tasks only on their
instance type.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import count

from plastic.core.errors import UnplaceableTaskError
from plastic.core.model import NodeShape, Resources, TaskSpec, type_allowed
from plastic.core.planning.lower_bound import Prices


class OpenNode:
    """A node being filled (mutable while the packer runs; never leaves the core)."""

    __slots__ = ("shape", "free_vcpus", "free_ram_mib", "tasks", "seq", "has_reliable", "pinned_type")

    def __init__(self, shape: NodeShape, seq: int):
        self.shape = shape
        self.free_vcpus = shape.usable.vcpus
        self.free_ram_mib = shape.usable.ram_mib
        self.tasks: list[TaskSpec] = []
        self.seq = seq
        self.has_reliable = False
        self.pinned_type: str | None = None

    def fits(self, task: TaskSpec) -> bool:
        return self.free_vcpus >= task.vcpus and self.free_ram_mib >= task.ram_mib

    def add(self, task: TaskSpec) -> None:
        self.free_vcpus -= task.vcpus
        self.free_ram_mib -= task.ram_mib
        self.tasks.append(task)
        if not task.preempt.preemptible:
            self.has_reliable = True
        if task.instance_type is not None:
            self.pinned_type = task.instance_type

    def remove(self, task: TaskSpec) -> None:
        self.tasks.remove(task)
        self.free_vcpus += task.vcpus
        self.free_ram_mib += task.ram_mib
        self.has_reliable = any(not t.preempt.preemptible for t in self.tasks)
        if task.instance_type is not None and not any(t.instance_type for t in self.tasks):
            self.pinned_type = None

    @property
    def used(self) -> Resources:
        return Resources(self.shape.usable.vcpus - self.free_vcpus, self.shape.usable.ram_mib - self.free_ram_mib)


def allowed_on(task: TaskSpec, shape: NodeShape) -> bool:
    """May `task` run on a node of `shape` at all (market and pinned type; not capacity)?"""
    if not task.preempt.preemptible and not shape.reliable:
        return False
    if not type_allowed(task.instance_type, shape.instance_type.name):
        return False
    return True


def shape_holds(task: TaskSpec, shape: NodeShape) -> bool:
    return allowed_on(task, shape) and shape.usable.holds(task.demand)


class _Pool:
    """Open nodes of one market indexed by free vCPUs, each bucket sorted by free RAM, with a bit
    mask of the buckets that are not empty (most are, out of a big catalog's hundred-odd sizes)."""

    def __init__(self, max_vcpus: int):
        self.buckets: list[list[tuple[int, int, OpenNode]]] = [[] for _ in range(max_vcpus + 1)]
        self.filled = 0  # bit v set: buckets[v] has a node
        self.size = 0

    def insert(self, node: OpenNode) -> None:
        if node.free_vcpus > 0 and node.free_ram_mib > 0:
            bisect.insort(self.buckets[node.free_vcpus], (node.free_ram_mib, node.seq, node))
            self.filled |= 1 << node.free_vcpus
            self.size += 1

    def remove(self, node: OpenNode) -> None:
        bucket = self.buckets[node.free_vcpus]
        i = bisect.bisect_left(bucket, (node.free_ram_mib, node.seq))
        if i < len(bucket) and bucket[i][2] is node:
            del bucket[i]
            if not bucket:
                self.filled &= ~(1 << node.free_vcpus)
            self.size -= 1

    def best(self, task: TaskSpec, prices: Prices) -> tuple[float, OpenNode] | None:
        """The node leaving the least dual-priced slack after taking `task`."""
        if not self.size:
            return None
        best: tuple[float, OpenNode] | None = None
        pc, pr = prices.usd_per_vcpu_hour, prices.usd_per_mib_hour
        key = (task.ram_mib, -1)
        buckets = self.buckets
        left = self.filled >> task.vcpus  # the filled buckets with room for the task's vCPUs, lowest first
        fv = task.vcpus
        while left:
            skip = (left & -left).bit_length() - 1
            fv += skip
            left >>= skip + 1
            extra_vcpus = pc * (fv - task.vcpus)
            if best is not None and extra_vcpus >= best[0]:
                break  # every node from here leaves at least this much slack (dual prices and RAM left are >= 0)
            bucket = buckets[fv]
            i = bisect.bisect_left(bucket, key)
            if i < len(bucket):
                fr, _, node = bucket[i]
                slack = extra_vcpus + pr * (fr - task.ram_mib)
                if best is None or slack < best[0]:
                    best = (slack, node)
            fv += 1
        return best


class OpenNodes:
    """Every open node, indexed for the tightest-fit query, whatever the market or pin."""

    def __init__(self, max_vcpus: int):
        self.nodes: list[OpenNode] = []
        self._on_demand, self._spot = _Pool(max_vcpus), _Pool(max_vcpus)
        self._by_type: dict[str, list[OpenNode]] = {}
        self._seq = count()

    def open(self, shape: NodeShape, tasks: Sequence[TaskSpec] = ()) -> OpenNode:
        node = OpenNode(shape, next(self._seq))
        for t in tasks:
            node.add(t)
        self.nodes.append(node)
        self._pool(node).insert(node)
        self._by_type.setdefault(shape.instance_type.name, []).append(node)
        return node

    def _pool(self, node: OpenNode) -> _Pool:
        return self._on_demand if node.shape.reliable else self._spot

    def tightest(self, task: TaskSpec, prices: Prices, *, exclude: OpenNode | None = None) -> OpenNode | None:
        """The node that `task` may use leaving the least dual-priced slack, or None."""
        if task.instance_type is not None:
            best: tuple[float, OpenNode] | None = None
            for node in self._by_type.get(task.instance_type, ()):
                if node is not exclude and node.fits(task) and (task.preempt.preemptible or node.shape.reliable):
                    slack = prices.usd_per_vcpu_hour * (node.free_vcpus - task.vcpus) + \
                        prices.usd_per_mib_hour * (node.free_ram_mib - task.ram_mib)
                    if best is None or slack < best[0]:
                        best = (slack, node)
            return None if best is None else best[1]
        cand = self._on_demand.best(task, prices)
        if task.preempt.preemptible:
            spot = self._spot.best(task, prices)
            if spot is not None and (cand is None or spot[0] < cand[0]):
                cand = spot
        return None if cand is None else cand[1]

    def put(self, node: OpenNode, task: TaskSpec) -> None:
        pool = self._pool(node)
        pool.remove(node)
        node.add(task)
        pool.insert(node)

    def take(self, node: OpenNode, task: TaskSpec) -> None:
        pool = self._pool(node)
        pool.remove(node)
        node.remove(task)
        pool.insert(node)

    def hide(self, node: OpenNode) -> None:
        """Keep `node` out of tightest() answers (its pinned tasks aside) until show()."""
        self._pool(node).remove(node)

    def show(self, node: OpenNode) -> None:
        self._pool(node).insert(node)


ShapeChooser = Callable[[TaskSpec, int, Sequence[TaskSpec]], NodeShape]


@dataclass(frozen=True, slots=True)
class PackedNode:
    """A node of the result: its shape and its tasks (what it uses is computed once)."""

    shape: NodeShape
    tasks: tuple[TaskSpec, ...]
    used: Resources = field(init=False, compare=False)
    has_reliable: bool = field(init=False, compare=False)
    pinned_type: str | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        cpu = ram = 0
        reliable = False
        pinned = None
        for t in self.tasks:
            cpu += t.vcpus
            ram += t.ram_mib
            reliable = reliable or t.preempt.max_preemptions == 0
            pinned = t.instance_type or pinned
        object.__setattr__(self, "used", Resources(cpu, ram))
        object.__setattr__(self, "has_reliable", reliable)
        object.__setattr__(self, "pinned_type", pinned)

    def may_use(self, shape: NodeShape) -> bool:
        """Could every task of this node run on `shape` (market, pinned type, capacity)?"""
        if self.has_reliable and not shape.reliable:
            return False
        if not type_allowed(self.pinned_type, shape.instance_type.name):
            return False
        return shape.usable.vcpus >= self.used.vcpus and shape.usable.ram_mib >= self.used.ram_mib


class ShapeMenu:
    """The shapes sorted by price, with a memo of which ones hold each kind of task."""

    def __init__(self, shapes: Sequence[NodeShape]):
        self.shapes: tuple[NodeShape, ...] = tuple(
            sorted(shapes, key=lambda s: (s.usd_per_hour, s.usable.vcpus, s.usable.ram_mib, s.name,
                                          s.market.value)))
        self._holding: dict[tuple[int, int, bool, str | None], tuple[NodeShape, ...]] = {}
        self.max_vcpus = max((s.usable.vcpus for s in self.shapes), default=0)
        # a task's size counts only up to the next size some shape has: tasks of 3 and of 4 vCPUs
        # fit the same shapes when the shapes have 2, 4 and 8 (so the memo holds few keys, however
        # varied the tasks)
        self._vcpu_steps = sorted({s.usable.vcpus for s in self.shapes})
        self._ram_steps = sorted({s.usable.ram_mib for s in self.shapes})

    def holding(self, task: TaskSpec) -> tuple[NodeShape, ...]:
        """Shapes that can host `task` alone, cheapest first."""
        return self.holding_demand(task.vcpus, task.ram_mib, task.preempt.max_preemptions != 0, task.instance_type)

    def holding_demand(self, vcpus: int, ram_mib: int, preemptible: bool, pinned: str | None) -> tuple[NodeShape, ...]:
        """Shapes with this much room, on either market if `preemptible` (else on-demand), of the
        type `pinned` if one is named; cheapest first."""
        i = bisect.bisect_left(self._vcpu_steps, vcpus)
        j = bisect.bisect_left(self._ram_steps, ram_mib)
        key = (i, j, preemptible, pinned)
        found = self._holding.get(key)
        if found is None:
            found = self._holding[key] = tuple(
                s for s in self.shapes
                if s.usable.vcpus >= vcpus and s.usable.ram_mib >= ram_mib and (preemptible or s.reliable)
                and type_allowed(pinned, s.instance_type.name)
            )
        return found

    def cheapest(self, task: TaskSpec) -> NodeShape:
        """The seeds' allocation rule: the cheapest shape with enough CPU and RAM (ties: smaller)."""
        found = self.holding(task)
        if not found:
            raise unplaceable(task, self.shapes)
        return found[0]

    def cheapest_for(self, node: PackedNode | OpenNode) -> NodeShape:
        """The cheapest shape that still holds all of `node`'s tasks (its own shape at worst)."""
        used = node.used
        found = self.holding_demand(used.vcpus, used.ram_mib, not node.has_reliable, node.pinned_type)
        if found and found[0].usd_per_hour < node.shape.usd_per_hour:
            return found[0]
        return node.shape


Shapes = Sequence[NodeShape] | ShapeMenu  # a menu, or the shapes to make one of


def menu_of(shapes: Shapes) -> ShapeMenu:
    return shapes if isinstance(shapes, ShapeMenu) else ShapeMenu(shapes)


def pack(
    ordered: Sequence[TaskSpec],
    shapes: Sequence[NodeShape],
    prices: Prices,
    choose_shape: ShapeChooser,
    *,
    initial: Sequence[PackedNode] = (),
    keep_empty: bool = False,
) -> list[PackedNode]:
    """Place every task of `ordered`, in that order, opening nodes as needed.

    Nodes of `initial` come first in the result, in their order; new nodes follow.
    Empty nodes are dropped unless `keep_empty`."""
    index = pack_open(ordered, shapes, prices, choose_shape, initial=initial)
    return [PackedNode(n.shape, tuple(n.tasks)) for n in index.nodes if n.tasks or keep_empty]


def pack_open(ordered: Sequence[TaskSpec], shapes: Sequence[NodeShape], prices: Prices,
              choose_shape: ShapeChooser, *, initial: Sequence[PackedNode] = ()) -> OpenNodes:
    """`pack`, leaving the nodes open (for more work on them before they are fixed)."""
    index = OpenNodes(max(s.usable.vcpus for s in shapes))
    for pn in initial:
        index.open(pn.shape, pn.tasks)
    for i, task in enumerate(ordered):
        target = index.tightest(task, prices)
        if target is None:
            index.open(choose_shape(task, i, ordered), (task,))
        else:
            index.put(target, task)
    return index


def cheapest_holding(task: TaskSpec, shapes: Sequence[NodeShape]) -> NodeShape:
    """The cheapest shape that holds `task` (see ShapeMenu for repeated use)."""
    return ShapeMenu(shapes).cheapest(task)


def unplaceable(task: TaskSpec, shapes: Sequence[NodeShape]) -> UnplaceableTaskError:
    """The error for a task that no shape can hold, naming the reason."""
    if task.instance_type is not None:
        pinned = [s for s in shapes if s.instance_type.name == task.instance_type]
        if not pinned:
            return UnplaceableTaskError(
                f"instanceType {task.instance_type!r} is not in the catalog", task_id=task.id,
                source=task.id, field="instanceType")
        cap = pinned[0].usable
        return UnplaceableTaskError(
            f"instanceType {task.instance_type} offers {cap.vcpus} vcpus / {cap.ram_mib} MiB usable, "
            f"smaller than the task's {task.vcpus} vcpus / {task.ram_mib} MiB",
            task_id=task.id, source=task.id, field="instanceType")
    market = "on-demand " if not task.preempt.preemptible else ""
    eligible = [s for s in shapes if allowed_on(task, s)]
    if not eligible:
        return UnplaceableTaskError(f"the catalog has no {market}instance type", task_id=task.id,
                                    source=task.id, field="preempt")
    max_cpu = max(s.usable.vcpus for s in eligible)
    max_ram = max(s.usable.ram_mib for s in eligible)
    if task.vcpus > max_cpu:
        what, field = f"vcpus {task.vcpus} exceeds the largest {market}instance type ({max_cpu} usable)", "vcpus"
    elif task.ram_mib > max_ram:
        what, field = f"vram {task.ram_mib} MiB exceeds the largest {market}instance type ({max_ram} MiB usable)", \
            "vram"
    else:
        what, field = (f"no {market}instance type has both {task.vcpus} vcpus and {task.ram_mib} MiB"), "vram"
    return UnplaceableTaskError(what, task_id=task.id, source=task.id, field=field)
