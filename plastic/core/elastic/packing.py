"""Packing for the elastic controller (plastic.core.elastic.controller), pure.

Two steps, both with the planner's rules (plastic.core.planning.packing: reliable tasks only on on-demand
shapes, a pinned type only on that type, first-fit decreasing, the cheapest shape that fits):

1. `fit_existing`: queued tasks onto the free room of the nodes there are (ready and booting), by
   groups of identical tasks (a scatter is one group), reliable and larger tasks first, preemptible
   work onto spot nodes first, the tightest node first; what does not fit is left over.
2. `plan_nodes`: new nodes for the leftover, with the planner's packing (the seeds' cheapest-shape
   rule and one look-ahead variant, each right-sized; the cheaper wins).  Past PLAN_TASKS_MAX tasks
   (a wide scatter that fits nowhere yet) `plan_groups` packs by groups instead, in time proportional
   to the groups, not the tasks: each group of identical tasks fills the nodes opened for earlier
   groups first, then opens nodes of the shape with the lowest price per task it holds (the last one
   left for later groups to fill); the nodes not filled are given the cheapest shape that holds each,
   or, when their tasks are few and it is cheaper, packed again by `plan_nodes`.  Spot shapes are compared at their risk-weighted
   price (`weighted_shapes`): a shape of a lower interruption band wins when the price difference is
   smaller than the difference in risk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from plastic.core.elastic.model import NodeView, WaitingTask
from plastic.core.model import (
    PREEMPTIBLE,
    RELIABLE,
    Market,
    NodeShape,
    TaskSpec,
    type_allowed,
)
from plastic.core.planning.choosers import bottleneck_values, lookahead_chooser, seeds_chooser, seeds_order
from plastic.core.planning.lower_bound import lower_bound
from plastic.core.planning.packing import PackedNode, ShapeMenu, pack
from plastic.core.planning.planner import right_size

# The Spot Instance Advisor's bands (frequency of interruption over a month), as a risk: the band's
# middle (the last band, ">20%", at 25%).  A spot shape is compared at price x (1 + weight x risk).
BAND_RISK = {"<5%": 0.025, "5-10%": 0.075, "10-15%": 0.125, "15-20%": 0.175, ">20%": 0.25}
UNKNOWN_BAND_RISK = 0.25


def band_risk(band: str | None) -> float:
    return BAND_RISK.get(band or "", UNKNOWN_BAND_RISK)


def weighted_shapes(shapes: Iterable[NodeShape], weight: float) -> list[NodeShape]:
    """The shapes with spot prices raised by their interruption risk (on-demand prices as they are)."""
    out = []
    for s in shapes:
        if s.market is Market.SPOT and weight:
            s = replace(s, usd_per_hour=s.usd_per_hour * (1.0 + weight * band_risk(s.instance_type.spot_interruption_band)))
        out.append(s)
    return out


@dataclass(frozen=True, slots=True)
class Group:
    """Identical queued tasks: one shape, one market rule, one pinned type."""

    vcpus: int
    ram_mib: int
    needs_reliable: bool
    instance_type: str | None
    task_ids: tuple[str, ...]
    step: str | None = None  # the plan step of its tasks (grouped apart when their runtimes spread)

    @property
    def order(self) -> tuple:
        """Reliable first, then larger first (the book's placement priority)."""
        return (not self.needs_reliable, -self.vcpus, -self.ram_mib, self.instance_type or "", self.task_ids[:1])


def group_tasks(tasks: Iterable[WaitingTask], steps: frozenset[str] = frozenset()) -> list[Group]:
    """Like tasks grouped; tasks of the ``steps`` named are grouped by step too (their runtimes spread)."""
    by_key: dict[tuple, list[str]] = {}
    for t in tasks:
        step = t.step if t.step in steps else None
        by_key.setdefault((t.demand.vcpus, t.demand.ram_mib, t.needs_reliable, t.instance_type, step),
                          []).append(t.task_id)
    return _groups(by_key)


def merge_steps(groups: Iterable[Group]) -> list[Group]:
    """Groups of like tasks again, whatever their steps (as `group_tasks` groups them without steps)."""
    by_key: dict[tuple, list[str]] = {}
    for g in groups:
        by_key.setdefault((g.vcpus, g.ram_mib, g.needs_reliable, g.instance_type, None), []).extend(g.task_ids)
    return _groups(by_key)


def _groups(by_key: dict[tuple, list[str]]) -> list[Group]:
    """(vCPUs, MiB, needs reliable, pinned type, step) -> task ids, as Groups in priority order."""
    groups = [Group(c, r, rel, pin, tuple(sorted(ids)), step) for (c, r, rel, pin, step), ids in by_key.items()]
    return sorted(groups, key=lambda g: g.order)


@dataclass(slots=True)
class Room:
    node_id: str
    reliable: bool
    instance_type: str
    vcpus: int
    ram_mib: int


def fit_existing(groups: Sequence[Group], nodes: Sequence[NodeView]) -> tuple[list[Group], dict[str, int]]:
    """Queued groups onto the nodes' free room.  Returns what is left over and, per node, how many
    queued tasks it was given (a node given work is not idle)."""
    left, placed = fit_into(groups, rooms_of(nodes))
    return left, {node_id: len(ids) for node_id, ids in placed.items()}


def rooms_of(nodes: Sequence[NodeView]) -> list[Room]:
    """The nodes' free room, in node id order."""
    return [Room(n.node_id, n.reliable, n.instance_type, n.free.vcpus, n.free.ram_mib)
            for n in sorted(nodes, key=lambda n: n.node_id)]


def fit_into(groups: Sequence[Group], rooms: Sequence[Room]) -> tuple[list[Group], dict[str, list[str]]]:
    """`fit_existing` on rooms, which are taken from as tasks fit; returns the groups' leftover and the
    task ids placed on each room."""
    placed: dict[str, list[str]] = {}
    left: list[Group] = []
    for g in groups:
        eligible = [r for r in rooms if r.vcpus > 0 and r.ram_mib > 0 and (r.reliable or not g.needs_reliable)
                    and type_allowed(g.instance_type, r.instance_type)]
        # preemptible work on spot nodes first (the book does the same), then the tightest room first
        eligible.sort(key=lambda r: (r.reliable and not g.needs_reliable, r.vcpus, r.ram_mib, r.node_id))
        at = 0
        for r in eligible:
            if at == len(g.task_ids):
                break
            k = min(r.vcpus // max(g.vcpus, 1), r.ram_mib // max(g.ram_mib, 1), len(g.task_ids) - at)
            if k <= 0:
                continue
            r.vcpus -= k * g.vcpus
            r.ram_mib -= k * g.ram_mib
            placed.setdefault(r.node_id, []).extend(g.task_ids[at:at + k])
            at += k
        if at < len(g.task_ids):
            left.append(replace(g, task_ids=g.task_ids[at:]))
    return left, placed


def tasks_of(groups: Iterable[Group]) -> list[TaskSpec]:
    return [TaskSpec(task_id, g.vcpus, g.ram_mib, RELIABLE if g.needs_reliable else PREEMPTIBLE,
                     instance_type=g.instance_type)
            for g in groups for task_id in g.task_ids]


def task_of(g: Group) -> TaskSpec:
    """One task of the group (they are all alike)."""
    return TaskSpec(g.task_ids[0], g.vcpus, g.ram_mib, RELIABLE if g.needs_reliable else PREEMPTIBLE,
                    instance_type=g.instance_type)


PLAN_TASKS_MAX = 150


def plan_nodes(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape]) -> list[PackedNode]:
    """New nodes for ``tasks`` (every one of them must fit some shape): the cheaper of the seeds'
    packing and one look-ahead packing, each right-sized (prices as the shapes give them); by groups
    (`plan_groups`) past PLAN_TASKS_MAX tasks."""
    if not tasks:
        return []
    if len(tasks) > PLAN_TASKS_MAX:
        return plan_groups(group_tasks(WaitingTask(t.id, t.demand, not t.preempt.preemptible, t.instance_type)
                                       for t in tasks), shapes)  # (the controller calls plan_groups itself)
    menu = ShapeMenu(shapes)
    prices = lower_bound(tasks, menu.shapes).prices
    seeds = right_size(pack(seeds_order(tasks, menu), menu.shapes, prices, seeds_chooser(menu)), menu)
    values = bottleneck_values(tasks, menu)
    ordered = sorted(tasks, key=lambda t: (t.preempt.preemptible, t.instance_type is None, -values[t.id],
                                           -t.vcpus, -t.ram_mib, t.id))
    ahead = right_size(pack(ordered, menu.shapes, prices, lookahead_chooser(menu, values, 8, 16)), menu)
    return min((seeds, ahead), key=_usd_per_hour)


@dataclass(slots=True)
class _Filling:
    shape: NodeShape
    vcpus: int
    ram_mib: int
    tasks: list[TaskSpec]


def _per_node(shape: NodeShape, g: Group) -> int:
    return min(shape.usable.vcpus // g.vcpus, shape.usable.ram_mib // g.ram_mib)


def plan_groups(groups: Sequence[Group], shapes: Sequence[NodeShape]) -> list[PackedNode]:
    """New nodes for groups of identical tasks (see the module docstring); groups in priority order."""
    menu = ShapeMenu(shapes)
    filling: list[_Filling] = []
    full: list[PackedNode] = []
    for g in groups:
        preempt = RELIABLE if g.needs_reliable else PREEMPTIBLE
        todo = [TaskSpec(i, g.vcpus, g.ram_mib, preempt, instance_type=g.instance_type) for i in g.task_ids]
        eligible = menu.holding(todo[0])
        if not eligible:
            continue  # no shape holds it: the book reports it
        names = {(s.instance_type.name, s.market) for s in eligible}
        for f in filling:
            if not todo:
                break
            if (f.shape.instance_type.name, f.shape.market) not in names:
                continue
            k = min(f.vcpus // g.vcpus, f.ram_mib // g.ram_mib, len(todo))
            if k > 0:
                f.tasks += todo[:k]
                f.vcpus -= k * g.vcpus
                f.ram_mib -= k * g.ram_mib
                todo = todo[k:]
        if not todo:
            continue
        best = min(eligible, key=lambda s: (s.usd_per_hour / _per_node(s, g), s.usd_per_hour, s.name))
        k = _per_node(best, g)
        while len(todo) >= k:
            full.append(PackedNode(best, tuple(todo[:k])))
            todo = todo[k:]
        if todo:  # the rest opens a node of the same shape, for later groups to fill; right-sized at the end
            filling.append(_Filling(best, best.usable.vcpus - len(todo) * g.vcpus,
                                    best.usable.ram_mib - len(todo) * g.ram_mib, todo))
    tail: list[PackedNode] = []
    for f in filling:
        node = PackedNode(f.shape, tuple(f.tasks))
        (tail if _has_room(f) else full).append(PackedNode(menu.cheapest_for(node), node.tasks))
    tail_tasks = [t for node in tail for t in node.tasks]
    if len(tail_tasks) <= PLAN_TASKS_MAX:  # few enough: the planner's packing, when it is cheaper
        repacked = plan_nodes(tail_tasks, shapes)
        if _usd_per_hour(repacked) < _usd_per_hour(tail):
            tail = repacked
    return full + tail


def _has_room(f: _Filling) -> bool:
    """Room left for one more of its smallest task."""
    return any(t.vcpus <= f.vcpus and t.ram_mib <= f.ram_mib for t in f.tasks)


def _usd_per_hour(nodes: Iterable[PackedNode]) -> float:
    return sum(n.shape.usd_per_hour for n in nodes)
