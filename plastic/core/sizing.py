"""The plasticity manager's sizing decision, end to end: workload + catalog -> Plan.

Three modes:
- concurrent: every task at once (the seeds' problem);
- waves (the default for workflows): a cluster that hosts each wave of tasks
  that can run together (waves.py), sized for the costliest wave and grown
  where another wave does not fit;
- budget: when the plan costs more than `--budget-per-hour`, the cheapest
  cluster that can still run every task (tasks then queue), grown with the
  most useful nodes of the full plan while the budget allows.  When even that
  cluster is over budget, a BudgetExceededError says what binds.
"""

from __future__ import annotations

from collections.abc import Sequence

from plastic.core.errors import BudgetExceededError, PlanningError
from plastic.core.lower_bound import Prices, lower_bound
from plastic.core.model import Catalog, Market, NodeShape, Reserve, Resources, TaskSpec, Workload, node_shapes
from plastic.core.packing import PackedNode, allowed_on, cheapest_holding, pack, shape_holds
from plastic.core.plan import Plan, PlannedNode, PlanOptions, cluster_names
from plastic.core.planner import (
    check_placeable,
    dual_values,
    ensure_reliable_capacity,
    lookahead_chooser,
    solve,
    sort_nodes,
    value_order,
)
from plastic.core.waves import find_waves


def plan_workload(workload: Workload, catalog: Catalog, *, reserve: Reserve = Reserve(),
                  options: PlanOptions = PlanOptions()) -> Plan:
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
        sol = solve(tasks, shapes, effort=options.effort)
        nodes, bound_usd, strategy, mode, n_waves = list(sol.nodes), sol.bound.usd_per_hour, sol.strategy, \
            "concurrent", 1
        assumptions.append("every task runs at the same time (--concurrent)")
    else:
        nodes, bound_usd, strategy, n_waves, note = _plan_waves(tasks, shapes, options.effort)
        mode = "waves"
        assumptions.append(note)
    cost = sum(n.shape.usd_per_hour for n in nodes)
    budget = options.budget_usd_per_hour
    if budget is not None and cost > budget + 1e-9:
        nodes, note = _fit_budget(tasks, shapes, nodes, budget, lower_bound(tasks, shapes).prices)
        mode = "budget"
        assumptions.append(note)
    return _to_plan(workload, tasks, nodes, shapes, bound_usd, mode, strategy, assumptions, reserve, budget,
                    n_waves, catalog)


# ---------------------------------------------------------------- waves

def _plan_waves(tasks: list[TaskSpec], shapes: Sequence[NodeShape], effort: int
                ) -> tuple[list[PackedNode], float, str, int, str]:
    waves = find_waves(tasks)
    distinct: dict[frozenset[str], tuple[TaskSpec, ...]] = {}
    for w in waves.sets:
        distinct.setdefault(frozenset(t.id for t in w), w)
    sets = list(distinct.values())
    bounds = [(lower_bound(w, shapes).usd_per_hour, w) for w in sets]
    # costliest first; ties broken by content so the input's order never matters
    bounds.sort(key=lambda bw: (-bw[0], sorted(t.id for t in bw[1])))
    first = solve(bounds[0][1], shapes, effort=effort)
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
    note = (f"planned for waves ({waves.basis}): the cluster hosts each of {len(sets)} waves of tasks that can "
            f"run at the same time; the widest has {widest} tasks; use --concurrent to plan for every task at once")
    return nodes, bounds[0][0], first.strategy, len(sets), note


# ---------------------------------------------------------------- budget

def minimal_cluster(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape]) -> list[PackedNode]:
    """The cheapest cluster found that can run every task, one after another if need be."""
    nodes: list[PackedNode] = []
    for t in sorted(tasks, key=lambda t: (t.preempt.preemptible, -t.vcpus, -t.ram_mib, t.id)):
        if any(shape_holds(t, n.shape) for n in nodes):
            continue
        nodes.append(PackedNode(cheapest_holding(t, shapes), ()))
    return ensure_reliable_capacity(nodes, shapes, tasks)


def _fit_budget(tasks: list[TaskSpec], shapes: Sequence[NodeShape], full: Sequence[PackedNode], budget: float,
                prices: Prices) -> tuple[list[PackedNode], str]:
    base = minimal_cluster(tasks, shapes)
    base_cost = sum(n.shape.usd_per_hour for n in base)
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
    # Grow with the most useful nodes of the full plan while the budget allows.
    chosen = list(base)
    spent = base_cost
    useful = sorted(full, key=lambda n: -sum(prices.value(t.demand, reliable=not t.preempt.preemptible)
                                              for t in n.tasks) / n.shape.usd_per_hour)
    for n in useful:
        if spent + n.shape.usd_per_hour <= budget + 1e-9:
            chosen.append(PackedNode(n.shape, ()))
            spent += n.shape.usd_per_hour
    # Place what fits at once; the rest queues on the least loaded node that can hold it.
    load = [Resources(0, 0) for _ in chosen]
    assigned: list[list[TaskSpec]] = [[] for _ in chosen]
    queued = 0
    for t in value_order(tasks, prices):
        fits_now = [i for i, n in enumerate(chosen)
                    if allowed_on(t, n.shape) and n.shape.usable.holds(load[i] + t.demand)]
        if fits_now:
            i = fits_now[0]
        else:
            queued += 1
            holders = [i for i, n in enumerate(chosen) if shape_holds(t, n.shape)]
            i = min(holders, key=lambda i: (load[i].vcpus / chosen[i].shape.usable.vcpus, i))
        load[i] = load[i] + t.demand
        assigned[i].append(t)
    nodes = [PackedNode(n.shape, tuple(ts)) for n, ts in zip(chosen, assigned, strict=True)]
    note = (f"budget-limited to ${budget:.4f}/h (the unconstrained plan costs "
            f"${sum(n.shape.usd_per_hour for n in full):.4f}/h): {queued} of {len(tasks)} tasks queue behind "
            f"others on their node, so the run takes longer")
    return nodes, note


# ---------------------------------------------------------------- output

def _to_plan(workload: Workload, tasks: list[TaskSpec], nodes: Sequence[PackedNode], shapes: Sequence[NodeShape],
             bound_usd: float, mode: str, strategy: str, assumptions: list[str], reserve: Reserve,
             budget: float | None, n_waves: int, catalog: Catalog) -> Plan:
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
        tasks=tuple(tasks), nodes=tuple(planned), cost_per_hour=cost, on_demand_cost_per_hour=od_cost,
        lower_bound_per_hour=bound_usd, mode=mode, assumptions=tuple(assumptions), strategy=strategy,
        reserve=Resources(reserve.vcpus, reserve.ram_mib), budget_usd_per_hour=budget, waves=n_waves,
        catalog_source=catalog.source,
    )
