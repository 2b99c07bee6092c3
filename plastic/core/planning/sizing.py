"""The plasticity manager's sizing decision, end to end: workload + catalog -> Plan.

Three modes:
- concurrent: every task at once (the seeds' problem);
- waves (the default for workflows): a cluster that hosts each wave of tasks
  that can run together (waves.py), sized for the costliest wave and grown
  where another wave does not fit;
- budget: when the plan costs more than `--budget-per-hour`, the cheapest
  cluster that can still run every task (tasks then queue), grown while the
  budget allows with nodes of any shape of the catalog, each chosen for what it
  would host of the tasks still queued in each wave (in every task at once with
  --concurrent): spot for preemptible tasks when it is cheaper, on-demand for
  reliable ones.  When even the cheapest cluster is over budget, a
  BudgetExceededError says what binds.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from plastic.core.errors import BudgetExceededError, PlanningError
from plastic.core.model import (
    Catalog,
    Market,
    NodeShape,
    Reserve,
    Resources,
    TaskSpec,
    Workload,
    node_shapes,
)
from plastic.core.planning.bounds import plan_bounds
from plastic.core.planning.choosers import bottleneck_values, dual_values, lookahead_chooser, value_order
from plastic.core.planning.lower_bound import lower_bound
from plastic.core.planning.packing import (
    PackedNode,
    allowed_on,
    cheapest_holding,
    pack,
    shape_holds,
)
from plastic.core.planning.plan import Bound, Plan, PlannedNode, PlanOptions, cluster_names
from plastic.core.planning.planner import (
    RunEach,
    check_placeable,
    ensure_reliable_capacity,
    one_by_one,
    solve,
    sort_nodes,
)
from plastic.core.planning.waves import Waves, find_waves


def plan_workload(workload: Workload, catalog: Catalog, *, reserve: Reserve = Reserve(),
                  options: PlanOptions = PlanOptions(), run_each: RunEach = one_by_one) -> Plan:
    """The plan for `workload`; `run_each` runs the planner's strategies (see planner.solve)."""
    shapes = node_shapes(catalog, reserve)
    if not shapes:
        raise PlanningError("no instance type of the catalog has capacity left after the reserve",
                            source=catalog.source or "catalog", field="reserve", binding_constraint="reserve")
    tasks = list(workload.tasks)
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            raise PlanningError("two tasks share this id", source=workload.source or None, field=t.id)
        seen.add(t.id)
    check_placeable(tasks, shapes)
    assumptions = list(workload.assumptions)
    if options.concurrent or not tasks:
        sol = solve(tasks, shapes, effort=options.effort, run_each=run_each)
        nodes, bound_usd, strategy, mode, n_waves = list(sol.nodes), sol.bound.usd_per_hour, sol.strategy, \
            "concurrent", 1
        assumptions.append("every task runs at the same time (--concurrent)")
    else:
        nodes, bound_usd, strategy, n_waves, note = _plan_waves(tasks, shapes, options.effort, run_each)
        mode = "waves"
        assumptions.append(note)
    cost = sum(n.shape.usd_per_hour for n in nodes)
    budget = options.budget_usd_per_hour
    queued = 0
    concurrent = mode == "concurrent"
    if budget is not None and cost > budget + 1e-9:
        together = [tuple(tasks)] if concurrent else _distinct_waves(tasks)[1]
        nodes, note, queued = _fit_budget(tasks, shapes, nodes, budget, together)
        mode = "budget"
        assumptions.append(note)
    bounds = plan_bounds(tasks, shapes, at_once_usd_per_hour=bound_usd, concurrent=concurrent,
                         runs_at_once=queued == 0)
    return _to_plan(workload, tasks, nodes, bounds, mode, strategy, assumptions, reserve, budget, n_waves, catalog)


# ---------------------------------------------------------------- waves

def _distinct_waves(tasks: Sequence[TaskSpec]) -> tuple[Waves, list[tuple[TaskSpec, ...]]]:
    """The waves of `tasks` and their distinct task sets, in the waves' order."""
    waves = find_waves(tasks)
    distinct: dict[frozenset[str], tuple[TaskSpec, ...]] = {}
    for w in waves.sets:
        distinct.setdefault(frozenset(t.id for t in w), w)
    return waves, list(distinct.values())


def _plan_waves(tasks: list[TaskSpec], shapes: Sequence[NodeShape], effort: int, run_each: RunEach
                ) -> tuple[list[PackedNode], float, str, int, str]:
    waves, sets = _distinct_waves(tasks)
    bounds = [(lower_bound(w, shapes).usd_per_hour, w) for w in sets]
    # costliest first; ties broken by content so the input's order never matters
    bounds.sort(key=lambda bw: (-bw[0], sorted(t.id for t in bw[1])))
    first = solve(bounds[0][1], shapes, effort=effort, run_each=run_each)
    pool: list[PackedNode] = [PackedNode(n.shape, ()) for n in first.nodes]
    placed: dict[str, int] = {}
    for i, n in enumerate(first.nodes):
        for t in n.tasks:
            placed[t.id] = i
    prices = first.bound.prices
    for _, wave in bounds[1:]:
        ordered = value_order(wave, prices)
        chooser = lookahead_chooser(shapes, dual_values(wave, prices), 16, 64)
        packed_nodes = pack(ordered, shapes, prices, chooser, initial=pool, keep_empty=True)
        for i, n in enumerate(packed_nodes):
            for t in n.tasks:
                placed.setdefault(t.id, i)
        pool = [PackedNode(n.shape, ()) for n in packed_nodes]
    by_node: list[list[TaskSpec]] = [[] for _ in pool]
    by_id = {t.id: t for t in tasks}
    for tid, i in placed.items():
        by_node[i].append(by_id[tid])
    nodes = [PackedNode(p.shape, tuple(ts)) for p, ts in zip(pool, by_node, strict=True)]
    nodes = ensure_reliable_capacity(nodes, shapes, tasks)
    widest = max((len(w) for w in sets), default=0)
    each = f"each of {len(sets)} waves" if len(sets) != 1 else "the one wave"
    note = (f"planned for waves ({waves.basis}): the cluster hosts {each} of tasks that can run at the same "
            f"time; the widest has {widest} task{'' if widest == 1 else 's'}; use --concurrent to plan for "
            "every task at once")
    return nodes, bounds[0][0], first.strategy, len(sets), note


# ---------------------------------------------------------------- budget

def minimal_cluster(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape]) -> list[PackedNode]:
    """The cheapest cluster found that can run every task, one after another if need be.

    Reliable tasks first, then pinned ones (they need their own type), then the
    biggest: a task that a node already bought can hold gets none.  Each node
    carries the task it was bought for, so that ensure_reliable_capacity turns it
    only into a shape that still holds that task; a task left without a node
    that can hold it all the same gets the cheapest one."""
    order = sorted(tasks, key=lambda t: (t.preempt.preemptible, t.instance_type is None, -t.vcpus, -t.ram_mib,
                                         t.id))
    nodes: list[PackedNode] = []
    for t in order:
        if any(shape_holds(t, n.shape) for n in nodes):
            continue
        nodes.append(PackedNode(cheapest_holding(t, shapes), (t,)))
    nodes = ensure_reliable_capacity(nodes, shapes, tasks)
    for t in order:
        if not any(shape_holds(t, n.shape) for n in nodes):
            nodes.append(PackedNode(cheapest_holding(t, shapes), (t,)))
    return nodes


# (queued kinds over the waves) x shapes: above it, two lazy greedy runs only (see _Growth.grow)
SMALL_WORK = 20_000


def _fit_budget(tasks: list[TaskSpec], shapes: Sequence[NodeShape], full: Sequence[PackedNode], budget: float,
                waves: Sequence[Sequence[TaskSpec]]) -> tuple[list[PackedNode], str, int]:
    """The minimal cluster (or the unconstrained plan `full`, when cheaper), grown with nodes of any
    shape of the catalog while the budget allows; with the note that says so and how many tasks queue.

    `waves` are the sets of tasks that run at the same time (every task at once
    when planning --concurrent).  A new node is worth what it would host at once
    of the tasks still queued in each wave, each task counted at the cheapest
    share of a node it could take (bottleneck_values: a reliable task only on
    on-demand shapes, so it is worth more).  The cluster grows greedily: by worth
    per dollar, by worth, and (small inputs) by worth per dollar after a head
    start of each node that fits; the one hosting the most worth is kept, the
    cheaper on a tie.  Nothing is bought that would host nothing, and never past
    the budget."""
    full_cost = sum(n.shape.usd_per_hour for n in full)
    base = minimal_cluster(tasks, shapes)
    base_cost = sum(n.shape.usd_per_hour for n in base)
    if full_cost < base_cost:  # the heuristic floor can miss what the planner found
        base, base_cost = list(full), full_cost
    if base_cost > budget + 1e-9:
        worst = max(base, key=lambda n: n.shape.usd_per_hour)
        needs = [t for t in tasks if shape_holds(t, worst.shape)
                 and not any(shape_holds(t, n.shape) for n in base if n is not worst)]
        why = ""
        if needs:
            t = max(needs, key=lambda t: (t.vcpus, t.ram_mib))
            why = (f"; task {t.id} ({t.vcpus} vcpus, {t.ram_mib} MiB, "
                   f"{'preemptible' if t.preempt.preemptible else 'reliable'}) needs at least "
                   f"{worst.shape.name} {worst.shape.market.value} at ${worst.shape.usd_per_hour:.4f}/h")
        raise BudgetExceededError(
            f"budget ${budget:.4f}/h is below the cheapest feasible plan, ${base_cost:.4f}/h{why}",
            field="--budget-per-hour", binding_constraint="budget", cheapest_feasible_usd_per_hour=base_cost)
    worth = bottleneck_values(tasks, shapes)
    menu = sorted(shapes, key=lambda s: (s.usd_per_hour, s.usable.vcpus, s.usable.ram_mib, s.name, s.market.value))
    start = _Growth([n.shape for n in base], waves, worth)
    # Greedy by worth per dollar, by worth, and by worth per dollar after each first node that
    # fits: the one-node head start catches a big node that the ratio alone would crowd out.
    runs: list[tuple[NodeShape | None, bool]] = [(None, True), (None, False)]
    small = start.width() * len(menu) <= SMALL_WORK
    if small:
        runs += [(s, True) for s in menu if s.usd_per_hour <= budget - start.cost + 1e-9 and start.gain(s) > 0]
    best = start
    for first, by_ratio in runs:
        g = start.copy()
        if first is not None:
            g.add(first)
        g.grow(menu, budget, by_ratio=by_ratio, lazy=not small)
        if g.hosted > best.hosted + 1e-9 or (g.hosted > best.hosted - 1e-9 and g.cost < best.cost - 1e-9):
            best = g
    nodes, queued = best.assign(tasks)
    note = (f"budget-limited to ${budget:.4f}/h (the unconstrained plan costs ${full_cost:.4f}/h): "
            f"{queued} of {len(tasks)} tasks queue behind others on their node"
            + (", so the run takes longer" if queued else ""))
    return nodes, note, queued


class _Kind:
    """Tasks of one wave that are alike for placement (demand, market, pin) and still queue."""

    __slots__ = ("ram_mib", "rep", "vcpus", "waiting", "worth")

    def __init__(self, rep: TaskSpec, worth: float, waiting: list[TaskSpec]):
        self.vcpus, self.ram_mib, self.rep, self.worth = rep.vcpus, rep.ram_mib, rep, worth
        self.waiting = waiting  # by id; the first ones are placed first

    def copy(self) -> _Kind:
        return _Kind(self.rep, self.worth, list(self.waiting))

    def room(self, cpu: int, ram: int) -> int:
        """How many of the waiting tasks fit in (cpu, ram) free."""
        n = len(self.waiting)
        if self.vcpus > 0:
            n = min(n, cpu // self.vcpus)
        if self.ram_mib > 0:
            n = min(n, ram // self.ram_mib)
        return n


class _Growth:
    """A cluster being grown: per wave, which tasks run at once on which node and which queue.

    Within a wave, tasks are placed first-fit in value order (reliable first, then
    pinned, then by decreasing worth), the nodes in the order they were bought."""

    def __init__(self, shapes: Sequence[NodeShape], waves: Sequence[Sequence[TaskSpec]], worth: dict[str, float]):
        self.shapes: list[NodeShape] = []
        self.cost = 0.0
        self.hosted = 0.0  # worth of the tasks running at once, summed over the waves
        self.placed: list[dict[str, int]] = [{} for _ in waves]
        self.queues: list[list[_Kind]] = []
        for wave in waves:
            groups: dict[tuple[int, int, bool, str | None], list[TaskSpec]] = {}
            for t in sorted(wave, key=lambda t: t.id):
                groups.setdefault((t.vcpus, t.ram_mib, t.preempt.preemptible, t.instance_type), []).append(t)
            kinds = [_Kind(ts[0], worth[ts[0].id], ts) for ts in groups.values()]
            kinds.sort(key=lambda k: (k.rep.preempt.preemptible, k.rep.instance_type is None, -k.worth,
                                      -k.vcpus, -k.ram_mib, k.rep.instance_type or ""))
            self.queues.append(kinds)
        for s in shapes:
            self.add(s)

    def copy(self) -> _Growth:
        other = object.__new__(_Growth)
        other.shapes, other.cost, other.hosted = list(self.shapes), self.cost, self.hosted
        other.placed = [dict(p) for p in self.placed]
        other.queues = [[k.copy() for k in kinds] for kinds in self.queues]
        return other

    def _fill(self, w: int, shape: NodeShape, node: int | None) -> float:
        """Worth of wave w's queued tasks that one empty node of `shape` would host; with
        `node` (its index), place them there."""
        cpu, ram = shape.usable.vcpus, shape.usable.ram_mib
        gain = 0.0
        for k in self.queues[w]:
            if not allowed_on(k.rep, shape):
                continue
            n = k.room(cpu, ram)
            if n <= 0:
                continue
            gain += n * k.worth
            cpu -= n * k.vcpus
            ram -= n * k.ram_mib
            if node is not None:
                for t in k.waiting[:n]:
                    self.placed[w][t.id] = node
                del k.waiting[:n]
            if cpu <= 0 or ram <= 0:
                break
        if node is not None:
            self.queues[w] = [k for k in self.queues[w] if k.waiting]
        return gain

    def width(self) -> int:
        """How many (wave, kind) pairs still queue: the work of one gain()."""
        return sum(len(kinds) for kinds in self.queues)

    def gain(self, shape: NodeShape) -> float:
        return sum(self._fill(w, shape, None) for w in range(len(self.queues)) if self.queues[w])

    def add(self, shape: NodeShape) -> None:
        node = len(self.shapes)
        self.shapes.append(shape)
        self.cost += shape.usd_per_hour
        self.hosted += sum(self._fill(w, shape, node) for w in range(len(self.queues)) if self.queues[w])

    def grow(self, menu: Sequence[NodeShape], budget: float, *, by_ratio: bool, lazy: bool) -> None:
        """Add, one at a time, the node whose shape hosts the most queued worth per dollar
        (`by_ratio`) or in all, until nothing more fits the budget or nothing queues.

        `lazy` (for big inputs): a shape's worth mostly shrinks as nodes are added (fewer
        tasks queue), so its last known key is taken to bound its next one, and a shape
        whose fresh key still tops every other shape's last known key wins without the
        others being counted again.  Otherwise every shape is counted at every step."""

        def key(i: int, s: NodeShape, g: float) -> tuple[float, float, float, int]:
            ratio = g / s.usd_per_hour if s.usd_per_hour > 0 else float("inf")
            return (-ratio, -g, s.usd_per_hour, i) if by_ratio else (-g, -ratio, s.usd_per_hour, i)

        def fits(s: NodeShape) -> bool:
            return s.usd_per_hour <= budget - self.cost + 1e-9

        def count_all() -> list[tuple[tuple[float, float, float, int], int, NodeShape]]:
            counted = [(key(i, s, g), i, s) for i, s in enumerate(menu) if fits(s) and (g := self.gain(s)) > 0]
            heapq.heapify(counted)
            return counted

        heap = count_all()
        fresh = {i for _, i, _ in heap}  # shapes counted since the last node was added
        while heap and any(self.queues):
            _, i, s = heapq.heappop(heap)
            if not fits(s):
                continue  # never fits again: the budget left only shrinks
            if i in fresh:
                self.add(s)
                if not lazy:
                    heap = count_all()
                    fresh = {i for _, i, _ in heap}
                    continue
                fresh.clear()
            g = self.gain(s)
            if g <= 0:
                continue  # hosts nothing now, nor later
            heapq.heappush(heap, (key(i, s, g), i, s))
            fresh.add(i)

    def assign(self, tasks: Sequence[TaskSpec]) -> tuple[list[PackedNode], int]:
        """Each task on the node it runs on in its first wave where it runs at once; a task
        that runs at once in none goes to the least loaded node that can hold it.  Also
        returns how many tasks queue in some wave."""
        node_of: dict[str, int] = {}
        for placed in self.placed:
            for tid, i in placed.items():
                node_of.setdefault(tid, i)
        queued_ids = {t.id for kinds in self.queues for k in kinds for t in k.waiting}
        assigned: list[list[TaskSpec]] = [[] for _ in self.shapes]
        load = [0] * len(self.shapes)
        late: list[TaskSpec] = []
        for t in tasks:
            i = node_of.get(t.id)
            if i is None:
                late.append(t)
                continue
            assigned[i].append(t)
            load[i] += t.vcpus
        for t in late:
            holders = [i for i, s in enumerate(self.shapes) if shape_holds(t, s)]
            i = min(holders, key=lambda i: (load[i] / self.shapes[i].usable.vcpus, i))
            assigned[i].append(t)
            load[i] += t.vcpus
            queued_ids.add(t.id)
        nodes = [PackedNode(s, tuple(ts)) for s, ts in zip(self.shapes, assigned, strict=True)]
        return nodes, len(queued_ids)


# ---------------------------------------------------------------- output

def _to_plan(workload: Workload, tasks: list[TaskSpec], nodes: Sequence[PackedNode], bounds: tuple[Bound, ...],
             mode: str, strategy: str, assumptions: list[str], reserve: Reserve, budget: float | None,
             n_waves: int, catalog: Catalog) -> Plan:
    nodes = sort_nodes(nodes)
    groups = sorted({(n.shape.name, n.shape.market, n.shape.usable.vcpus) for n in nodes},
                    key=lambda g: (g[1].value, g[2], g[0]))
    names = cluster_names(groups)
    counters: dict[str, int] = {}
    planned: list[PlannedNode] = []
    for n in nodes:
        cluster = names[(n.shape.name, n.shape.market)]
        counters[cluster] = counters.get(cluster, 0) + 1
        planned.append(PlannedNode(
            id=f"{cluster}-{counters[cluster]}", cluster=cluster, instance_type=n.shape.name,
            market=n.shape.market, usd_per_hour=n.shape.usd_per_hour, capacity=n.shape.usable,
            task_ids=tuple(t.id for t in n.tasks),
            on_demand_usd_per_hour=n.shape.instance_type.on_demand_usd_per_hour,
            spot_interruption_band=n.shape.instance_type.spot_interruption_band
            if n.shape.market is Market.SPOT else None,
        ))
    cost = sum(n.usd_per_hour for n in planned)
    od_cost = sum(n.on_demand_usd_per_hour for n in planned)
    return Plan(
        tasks=tuple(tasks), nodes=tuple(planned), usd_per_hour=cost, on_demand_usd_per_hour=od_cost,
        lower_bound_usd_per_hour=bounds[0].usd_per_hour, mode=mode,
        assumptions=tuple(assumptions), strategy=strategy, reserve=Resources(reserve.vcpus, reserve.ram_mib),
        budget_usd_per_hour=budget, waves=n_waves, catalog_source=catalog.source, bounds=bounds,
    )
