"""Comparison planners for the planning benchmark (bench/plan_quality.py).

Each baseline packs *every task at once* (all tasks run concurrently, as in
`plastic plan --concurrent`) and returns a list of `PackedNode(shape, tasks)`:

- `naive_ffd`: cheapest-fitting-type-per-job first-fit decreasing.
- `toil_binpacked_fit`: the packing rule of Toil's cluster scaler (BinPackedFit).
- `all_on_demand`: plastic's own planner with every task made reliable.

All of them obey the same placement rules as plastic: capacity in both
dimensions (whole vCPUs, MiB of RAM), reliable (preempt=false) tasks only on
on-demand nodes, and a task pinned to an instance type only on that type.
For fairness they also obey the paper's guarantee of at least one on-demand
node: `ensure_on_demand_node` adds the cheapest on-demand shape (an empty
node) to a plan that has none.

These are re-implementations written for this benchmark from the published
descriptions (and, for Toil, from reading its source); no code is copied.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

try:
    from plastic.core.model import RELIABLE, NodeShape, TaskSpec
except ModuleNotFoundError:  # run from a checkout without an installed plastic
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from plastic.core.model import RELIABLE, NodeShape, TaskSpec

from plastic.core.planning.packing import PackedNode, allowed_on
from plastic.core.planning.planner import solve

__all__ = [
    "all_on_demand",
    "check_packing",
    "ensure_on_demand_node",
    "naive_ffd",
    "toil_binpacked_fit",
    "toil_shape_order",
]


# ---------------------------------------------------------------- helpers

def _holds(shape: NodeShape, task: TaskSpec) -> bool:
    """May an *empty* node of `shape` take `task` (market, pin and capacity)?"""
    return allowed_on(task, shape) and shape.usable.vcpus >= task.vcpus and shape.usable.ram_mib >= task.ram_mib


def _no_shape(task: TaskSpec) -> ValueError:
    return ValueError(f"no node shape can hold task {task.id} ({task.vcpus} vcpus, {task.ram_mib} MiB, "
                      f"preempt={task.preempt})")


class _Bin:
    __slots__ = ("shape", "free_vcpus", "free_ram_mib", "tasks", "pos")

    def __init__(self, shape: NodeShape):
        self.shape = shape
        self.free_vcpus = shape.usable.vcpus
        self.free_ram_mib = shape.usable.ram_mib
        self.tasks: list[TaskSpec] = []
        self.pos = -1  # position in its _FirstFitIndex

    def fits(self, task: TaskSpec) -> bool:
        return self.free_vcpus >= task.vcpus and self.free_ram_mib >= task.ram_mib

    def add(self, task: TaskSpec) -> None:
        self.free_vcpus -= task.vcpus
        self.free_ram_mib -= task.ram_mib
        self.tasks.append(task)


class _FirstFitIndex:
    """Bins in opening order; finds the *first* bin with free vCPUs >= c and free RAM >= r.

    Exact first fit in O(log n) per query: for every vCPU threshold c there is a
    max-segment tree over bin positions holding the bin's free RAM when its free
    vCPUs reach c (else -1); the answer is the leftmost leaf >= r in tree c.
    This only makes the benchmark fast at 10,000 tasks; the result is the same
    as scanning the bins in order.
    """

    def __init__(self, max_vcpus: int):
        self.max_vcpus = max_vcpus
        self.size = 16
        self.trees = [[-1] * (2 * self.size) for _ in range(max_vcpus + 1)]
        self.bins: list[_Bin] = []

    def _grow(self) -> None:
        old = self.size
        self.size *= 2
        for c, tree in enumerate(self.trees):
            new = [-1] * (2 * self.size)
            new[self.size:self.size + old] = tree[old:2 * old]
            for i in range(self.size - 1, 0, -1):
                a, b = new[2 * i], new[2 * i + 1]
                new[i] = a if a > b else b
            self.trees[c] = new

    def _set(self, pos: int, b: _Bin) -> None:
        size = self.size
        for c in range(self.max_vcpus + 1):
            tree = self.trees[c]
            v = b.free_ram_mib if b.free_vcpus >= c else -1
            i = pos + size
            if tree[i] == v:
                continue
            tree[i] = v
            i >>= 1
            while i:
                a, d = tree[2 * i], tree[2 * i + 1]
                m = a if a > d else d
                if tree[i] == m:
                    break
                tree[i] = m
                i >>= 1

    def append(self, b: _Bin) -> int:
        if len(self.bins) == self.size:
            self._grow()
        self.bins.append(b)
        pos = b.pos = len(self.bins) - 1
        self._set(pos, b)
        return pos

    def first_fit(self, task: TaskSpec) -> int | None:
        c = max(task.vcpus, 0)
        if c > self.max_vcpus:
            return None
        tree = self.trees[c]
        r = task.ram_mib
        if tree[1] < r:
            return None
        i = 1
        while i < self.size:
            i = 2 * i if tree[2 * i] >= r else 2 * i + 1
        return i - self.size

    def place(self, pos: int, task: TaskSpec) -> None:
        b = self.bins[pos]
        b.add(task)
        self._set(pos, b)


def _packed(bins: Sequence[_Bin]) -> list[PackedNode]:
    return [PackedNode(b.shape, tuple(b.tasks)) for b in bins if b.tasks]


def cheapest_on_demand(shapes: Sequence[NodeShape]) -> NodeShape:
    od = [s for s in shapes if s.reliable]
    if not od:
        raise ValueError("the catalog has no on-demand shape")
    return min(od, key=lambda s: (s.usd_per_hour, s.usable.vcpus, s.usable.ram_mib, s.name))


def ensure_on_demand_node(nodes: Sequence[PackedNode], shapes: Sequence[NodeShape]) -> tuple[list[PackedNode], bool]:
    """The paper's "at least one reliable node": when `nodes` has no on-demand node,
    add an empty node of the cheapest on-demand shape.  Returns (nodes, added?)."""
    nodes = list(nodes)
    if any(n.shape.reliable for n in nodes):
        return nodes, False
    return nodes + [PackedNode(cheapest_on_demand(shapes), ())], True


# ---------------------------------------------------------------- (a) naive FFD

def ffd_size(task: TaskSpec, shapes: Sequence[NodeShape]) -> float:
    """A job's size for the naive FFD: vCPUs and RAM each as a share of the largest
    usable capacity in the catalog, summed (the "FFDSum" of Panigrahy et al. 2011)."""
    max_c = max(s.usable.vcpus for s in shapes)
    max_r = max(s.usable.ram_mib for s in shapes)
    return task.vcpus / max_c + task.ram_mib / max_r


def naive_ffd(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], *,
              ensure_on_demand: bool = True) -> list[PackedNode]:
    """Naive cheapest-fitting-type-per-job first-fit decreasing.

    1. Jobs sorted by size descending (`ffd_size`: vCPU share + RAM share of the
       largest shape; ties keep input order).  Reliable jobs get no priority.
    2. Each job goes onto the first open node, in opening order, that has room
       for it and may take it (a reliable job only on an on-demand node, a
       pinned job only on its type; a preemptible job on any market).
    3. Else a new node of the cheapest shape that holds the job alone: reliable
       jobs over on-demand shapes only, preemptible jobs over spot and on-demand
       shapes (ties: fewer vCPUs, less RAM, name).
    Price enters only through step 3, one job at a time.
    """
    if not tasks:
        nodes: list[PackedNode] = []
        return ensure_on_demand_node(nodes, shapes)[0] if ensure_on_demand else nodes
    max_c = max(s.usable.vcpus for s in shapes)
    max_r = max(s.usable.ram_mib for s in shapes)
    order = sorted(tasks, key=lambda t: -(t.vcpus / max_c + t.ram_mib / max_r))  # stable

    cheapest: dict[tuple[int, int, bool, str | None], NodeShape] = {}

    def new_shape(t: TaskSpec) -> NodeShape:
        key = (t.vcpus, t.ram_mib, t.preempt.preemptible, t.instance_type)
        s = cheapest.get(key)
        if s is None:
            cands = [s for s in shapes if _holds(s, t)]
            if not cands:
                raise _no_shape(t)
            s = cheapest[key] = min(cands, key=lambda s: (s.usd_per_hour, s.usable.vcpus, s.usable.ram_mib, s.name))
        return s

    # Open nodes, split by market so a reliable job searches on-demand nodes only;
    # `seq` maps a position in either index back to the global opening order.
    od, spot = _FirstFitIndex(max_c), _FirstFitIndex(max_c)
    od_seq: list[int] = []
    spot_seq: list[int] = []
    all_bins: list[_Bin] = []
    for t in order:
        if t.instance_type is not None:  # rare: scan the nodes of the pinned type in order
            target = next((b for b in all_bins
                           if b.shape.name == t.instance_type and allowed_on(t, b.shape) and b.fits(t)), None)
            if target is not None:
                (od if target.shape.reliable else spot).place(target.pos, t)
                continue
        else:
            p_od = od.first_fit(t)
            p_spot = spot.first_fit(t) if t.preempt.preemptible else None
            if p_od is not None and (p_spot is None or od_seq[p_od] < spot_seq[p_spot]):
                od.place(p_od, t)
                continue
            if p_spot is not None:
                spot.place(p_spot, t)
                continue
        b = _Bin(new_shape(t))
        b.add(t)
        if b.shape.reliable:
            od.append(b)
            od_seq.append(len(all_bins))
        else:
            spot.append(b)
            spot_seq.append(len(all_bins))
        all_bins.append(b)
    nodes = _packed(all_bins)
    return ensure_on_demand_node(nodes, shapes)[0] if ensure_on_demand else nodes


# ---------------------------------------------------------------- (b) Toil BinPackedFit

def toil_shape_order(shapes: Sequence[NodeShape]) -> list[NodeShape]:
    """Node shapes in Toil's ascending order: preemptible (spot) before on-demand,
    then memory, then cores.  Toil's shapes have no name or price, so equal shapes
    are one shape there; here ties fall to price, then name (never decisive in
    the default catalog)."""
    return sorted(shapes, key=lambda s: (s.reliable, s.usable.ram_mib, s.usable.vcpus, s.usd_per_hour, s.name))


def toil_binpacked_fit(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], *,
                       ensure_on_demand: bool = True) -> list[PackedNode]:
    """The packing rule of Toil's cluster scaler (toil/provisioners/clusterScaler.py,
    class BinPackedFit, Toil 9.6), re-implemented for a set of jobs that all run at once.

    1. Node shapes sorted ascending as Toil's `Shape` orders them: preemptible
       shapes before on-demand ones, then by memory, then by cores
       (`toil_shape_order`).  Every (type, market) of the catalog is offered, as if
       Toil were given each type both with and without a spot bid.
    2. Jobs sorted descending in the same order: reliable (non-preemptible) jobs
       first, then memory, then cores, then runtime; ties keep input order
       (Python's sort is stable, as Toil's is).
    3. Each job takes the *first* shape in that order whose empty node holds it
       (a preemptible job may use any shape, so it lands on the smallest-memory
       spot shape that holds it; a reliable job only on on-demand shapes).
    4. It is first-fitted into the nodes already opened *of that shape*, in
       opening order; if none has room, a new node of that shape is opened.
    Price never enters: shapes are chosen by size alone.

    Simplifications, stated: Toil also packs disk (plastic has no disk
    dimension; ignored) and reserves capacity in 1-hour time slices, letting a
    job start up to --targetTime (1800 s) late in a later slice of a busy node.
    Here every job runs at the same time (plastic plans concurrent execution),
    so each node is a single slice and that sequential reuse is not modelled.
    Toil's extra on-demand nodes for spot capacity it fails to get
    (--preemptibleCompensation) do not apply to a plan either.
    Plastic's instance-type pins (which Toil does not have) are honoured by
    offering a pinned job only the shapes of its type.
    """
    ordered_shapes = toil_shape_order(shapes)
    order = sorted(tasks, key=lambda t: (t.preempt.preemptible, -t.ram_mib, -t.vcpus,
                                         -(t.runtime_s or 0.0)))  # stable
    first_shape: dict[tuple[int, int, bool, str | None], int] = {}
    max_c = max((s.usable.vcpus for s in shapes), default=0)
    per_shape: dict[int, _FirstFitIndex] = {}
    all_bins: list[_Bin] = []
    for t in order:
        key = (t.vcpus, t.ram_mib, t.preempt.preemptible, t.instance_type)
        si = first_shape.get(key)
        if si is None:
            si = next((i for i, s in enumerate(ordered_shapes) if _holds(s, t)), -1)
            first_shape[key] = si
        if si < 0:
            raise _no_shape(t)
        idx = per_shape.get(si)
        if idx is None:
            idx = per_shape[si] = _FirstFitIndex(max_c)
        pos = idx.first_fit(t)
        if pos is not None:
            idx.place(pos, t)
            continue
        b = _Bin(ordered_shapes[si])
        b.add(t)
        idx.append(b)
        all_bins.append(b)
    nodes = _packed(all_bins)
    return ensure_on_demand_node(nodes, shapes)[0] if ensure_on_demand else nodes


# ---------------------------------------------------------------- (c) all on demand

def all_on_demand(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], *, effort: int = 2) -> list[PackedNode]:
    """plastic's own planner (`solve`, same effort) with every task made reliable, so
    every node is on-demand: the price of the same packing quality without spot."""
    reliable = [replace(t, preempt=RELIABLE) for t in tasks]
    return list(solve(reliable, shapes, effort=effort).nodes)


# ---------------------------------------------------------------- validation

def check_packing(tasks: Sequence[TaskSpec], nodes: Sequence[PackedNode]) -> None:
    """Raise AssertionError unless `nodes` is a valid packing of `tasks`: every task
    exactly once, no node over capacity in vCPUs or RAM, reliable tasks only on
    on-demand nodes, pinned tasks only on their type."""
    want: dict[str, int] = {}
    for t in tasks:
        want[t.id] = want.get(t.id, 0) + 1
    seen: dict[str, int] = {}
    for k, n in enumerate(nodes):
        cpu = sum(t.vcpus for t in n.tasks)
        ram = sum(t.ram_mib for t in n.tasks)
        if cpu > n.shape.usable.vcpus or ram > n.shape.usable.ram_mib:
            raise AssertionError(f"node {k} ({n.shape.name} {n.shape.market}) over capacity: {cpu} vcpus / "
                                 f"{ram} MiB in {n.shape.usable.vcpus} / {n.shape.usable.ram_mib}")
        for t in n.tasks:
            if not t.preempt.preemptible and not n.shape.reliable:
                raise AssertionError(f"reliable task {t.id} on {n.shape.market} node {k}")
            if t.instance_type is not None and t.instance_type != n.shape.name:
                raise AssertionError(f"task {t.id} pinned to {t.instance_type} on {n.shape.name}")
            seen[t.id] = seen.get(t.id, 0) + 1
    if seen != want:
        missing = sorted(set(want) - set(seen))[:5]
        extra = sorted(i for i in seen if seen[i] != want.get(i))[:5]
        raise AssertionError(f"tasks not placed exactly once: missing {missing}, wrong count {extra}")
