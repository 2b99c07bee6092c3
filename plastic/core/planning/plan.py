"""The plan: which nodes to buy, in which clusters, hosting which tasks.

`plan_to_json` gives the documented, stable `plastic.plan/v1` schema that
later stages (the local cluster, `plastic run`) read back with
`plan_from_json`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from plastic.core.errors import InputError
from plastic.core.model import Market, Preempt, Resources, TaskSpec, type_allowed
from plastic.core.naming import cluster_name, cluster_name_problem

SCHEMA = "plastic.plan/v1"


def step_of(task_id: str) -> str:
    """The CWL step of a plan's task (one per step, or per scatter element): "per_sample/sort[3]" ->
    "per_sample/sort"."""
    head, bracket, tail = task_id.rpartition("[")
    return head if bracket and tail.endswith("]") and tail[:-1].isdigit() else task_id


@dataclass(frozen=True, slots=True)
class PlannedNode:
    id: str
    cluster: str
    instance_type: str
    market: Market
    usd_per_hour: float
    capacity: Resources  # usable capacity after the per-node reserve
    task_ids: tuple[str, ...]
    on_demand_usd_per_hour: float = 0.0
    spot_interruption_band: str | None = None


@dataclass(frozen=True, slots=True)
class Cluster:
    name: str
    instance_type: str
    market: Market
    count: int
    usd_per_hour: float  # for the whole cluster


# What a lower bound is of: no cluster that runs the tasks so costs less (plastic.core.planning.bounds)
EVERY_TASK_AT_ONCE = "every task at once"
EACH_WAVE_AT_ONCE = "each wave at once"
ONE_AFTER_ANOTHER = "every task, one after another"


@dataclass(frozen=True, slots=True)
class Bound:
    """No cluster that runs the plan's tasks as `to_run` says costs less than `usd_per_hour`; `applies`:
    the plan's cluster is one of them, so the bound is one of its cost (not so for the at-once bound of a
    budget plan whose tasks queue)."""

    usd_per_hour: float
    to_run: str
    applies: bool = True


@dataclass(frozen=True, slots=True)
class Plan:
    tasks: tuple[TaskSpec, ...]
    nodes: tuple[PlannedNode, ...]
    usd_per_hour: float
    on_demand_usd_per_hour: float  # the same nodes, all bought on demand
    lower_bound_usd_per_hour: float  # bounds this plan's cost: the greatest of `bounds` that applies
    mode: str  # "concurrent" | "waves" | "budget"
    assumptions: tuple[str, ...] = ()
    strategy: str = ""
    reserve: Resources = Resources(0, 0)
    budget_usd_per_hour: float | None = None
    waves: int = 1
    catalog_source: str = ""
    bounds: tuple[Bound, ...] = ()  # the one that binds first (plastic.core.planning.bounds.plan_bounds)

    @property
    def clusters(self) -> tuple[Cluster, ...]:
        seen: dict[str, Cluster] = {}
        for n in self.nodes:
            c = seen.get(n.cluster)
            if c is None:
                seen[n.cluster] = Cluster(n.cluster, n.instance_type, n.market, 1, n.usd_per_hour)
            else:
                seen[n.cluster] = Cluster(c.name, c.instance_type, c.market, c.count + 1,
                                          c.usd_per_hour + n.usd_per_hour)
        return tuple(seen.values())

    @property
    def savings_vs_on_demand(self) -> float:
        if self.on_demand_usd_per_hour <= 0:
            return 0.0
        return 1.0 - self.usd_per_hour / self.on_demand_usd_per_hour

    @property
    def cost_over_lower_bound(self) -> float | None:
        """The plan's cost over its lower bound (at least 1, but for float noise); None without a bound."""
        if self.lower_bound_usd_per_hour <= 0:
            return None
        return self.usd_per_hour / self.lower_bound_usd_per_hour


def beyond_on_demand(plan: Plan) -> tuple[TaskSpec, ...]:
    """The plan's preemptible tasks that no on-demand node of the plan could hold alone (of their
    instance type, when pinned).  On a cluster that cannot grow (`plastic run --static`, a given
    --master) such a task has nowhere to go once the spot nodes that fit it are lost, or once it has
    used up its preemptions: the run fails it."""
    # each kind of on-demand node once (a big plan has thousands of nodes, few kinds)
    reliable = {(n.capacity.vcpus, n.capacity.ram_mib, n.instance_type) for n in plan.nodes
                if n.market is Market.ON_DEMAND}
    return tuple(t for t in plan.tasks if t.preempt.preemptible and not any(
        t.vcpus <= vcpus and t.ram_mib <= ram_mib and type_allowed(t.instance_type, name)
        for vcpus, ram_mib, name in reliable))


def static_risk(plan: Plan) -> str | None:
    """One sentence on the tasks of `beyond_on_demand`, or None when there are none."""
    tasks = beyond_on_demand(plan)
    if not tasks:
        return None
    steps = list(dict.fromkeys(step_of(t.id) for t in tasks))
    named = ", ".join(steps[:3]) + (f" and {len(steps) - 3} more" if len(steps) > 3 else "")
    return (f"on a cluster that cannot grow (--static, --master), {len(tasks)} preemptible task(s) of {named} "
            f"fit no on-demand node of this plan: if the spot nodes that fit them are lost, the run fails; "
            f"an elastic run creates on-demand nodes for them")


def _r(x: float) -> float:
    return round(x, 6)


def plan_to_json(plan: Plan) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "mode": plan.mode,
        "strategy": plan.strategy,
        "assumptions": list(plan.assumptions),
        "reserve": {"vcpus": plan.reserve.vcpus, "ram_mib": plan.reserve.ram_mib},
        "budget_per_hour": plan.budget_usd_per_hour,
        "catalog": plan.catalog_source,
        "tasks": [
            {
                "id": t.id,
                "vcpus": t.vcpus,
                "ram_mib": t.ram_mib,
                "preempt": t.preempt.to_json(),
                "runtime_s": t.runtime_s,
                **({"instance_type": t.instance_type} if t.instance_type else {}),
                **({"parents": list(t.parents)} if t.parents else {}),
            }
            for t in plan.tasks
        ],
        "clusters": [
            {"name": c.name, "instance_type": c.instance_type, "market": c.market.value, "count": c.count,
             "usd_per_hour": _r(c.usd_per_hour)}
            for c in plan.clusters
        ],
        "nodes": [
            {
                "id": n.id,
                "cluster": n.cluster,
                "instance_type": n.instance_type,
                "market": n.market.value,
                "usd_per_hour": _r(n.usd_per_hour),
                "on_demand_usd_per_hour": _r(n.on_demand_usd_per_hour),
                "spot_interruption_band": n.spot_interruption_band,
                "capacity": {"vcpus": n.capacity.vcpus, "ram_mib": n.capacity.ram_mib},
                "tasks": list(n.task_ids),
            }
            for n in plan.nodes
        ],
        "cost_per_hour": _r(plan.usd_per_hour),
        "on_demand_cost_per_hour": _r(plan.on_demand_usd_per_hour),
        "savings_vs_on_demand": round(plan.savings_vs_on_demand, 4),
        "lower_bound_usd_per_hour": _r(plan.lower_bound_usd_per_hour),
        "cost_over_lower_bound": None if (r := plan.cost_over_lower_bound) is None else round(r, 4),
        "lower_bounds": [{"usd_per_hour": _r(b.usd_per_hour), "to_run": b.to_run, "bounds_this_plan": b.applies}
                         for b in plan.bounds],
    }


def _need(doc: Mapping[str, Any], key: str, where: str, source: str) -> Any:
    if key not in doc:
        raise InputError(f"missing field {key!r}", source=source, field=where + key)
    return doc[key]


def plan_from_json(doc: Any, *, source: str = "plan") -> Plan:
    """Read a plan written by `plan_to_json` (validated enough for later stages)."""
    if not isinstance(doc, Mapping) or doc.get("schema") != SCHEMA:
        raise InputError(f"not a {SCHEMA} document", source=source, field="schema")
    try:
        tasks = tuple(
            TaskSpec(
                id=str(t["id"]), vcpus=int(t["vcpus"]), ram_mib=int(t["ram_mib"]),
                preempt=Preempt.from_json(t["preempt"]), runtime_s=t.get("runtime_s"),
                instance_type=t.get("instance_type"), parents=tuple(t.get("parents", ())),
            )
            for t in _need(doc, "tasks", "", source)
        )
        nodes = tuple(
            PlannedNode(
                id=str(n["id"]), cluster=str(n["cluster"]), instance_type=str(n["instance_type"]),
                market=Market(n["market"]), usd_per_hour=float(n["usd_per_hour"]),
                capacity=Resources(int(n["capacity"]["vcpus"]), int(n["capacity"]["ram_mib"])),
                task_ids=tuple(n.get("tasks", ())),
                on_demand_usd_per_hour=float(n.get("on_demand_usd_per_hour", 0.0)),
                spot_interruption_band=n.get("spot_interruption_band"),
            )
            for n in _need(doc, "nodes", "", source)
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"malformed plan ({type(exc).__name__}: {exc})", source=source, field="nodes") from None
    for i, n in enumerate(nodes):
        if (problem := cluster_name_problem(n.cluster)) is not None:
            raise InputError(problem, source=source, field=f"nodes[{i}].cluster")
    reserve = doc.get("reserve") or {}
    mode = str(doc.get("mode", "concurrent"))
    bound, bounds = _bounds_from_json(doc, mode, source)
    return Plan(
        tasks=tasks, nodes=nodes,
        usd_per_hour=float(_need(doc, "cost_per_hour", "", source)),
        on_demand_usd_per_hour=float(doc.get("on_demand_cost_per_hour", 0.0)),
        lower_bound_usd_per_hour=bound, mode=mode, assumptions=tuple(doc.get("assumptions", ())),
        strategy=str(doc.get("strategy", "")),
        reserve=Resources(int(reserve.get("vcpus", 0)), int(reserve.get("ram_mib", 0))),
        budget_usd_per_hour=doc.get("budget_per_hour"), catalog_source=str(doc.get("catalog", "")), bounds=bounds,
    )


def _bounds_from_json(doc: Mapping[str, Any], mode: str, source: str) -> tuple[float, tuple[Bound, ...]]:
    """(the lower bound, the bounds) of a plan document.  A plan written before the bounds said what they
    bound has `lower_bound_per_hour`, the at-once bound: of a budget plan it may be no bound of its cost."""
    try:
        bounds = tuple(Bound(float(b["usd_per_hour"]), str(b["to_run"]), bool(b["bounds_this_plan"]))
                       for b in doc.get("lower_bounds") or ())
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"malformed lower bound ({type(exc).__name__}: {exc})", source=source,
                         field="lower_bounds") from None
    if "lower_bound_usd_per_hour" in doc:
        return float(doc["lower_bound_usd_per_hour"] or 0.0), bounds
    if mode == "budget":  # which tasks it ran at once, and so what the old figure bounded, is not known
        return 0.0, ()
    old = float(doc.get("lower_bound_per_hour", 0.0))
    return old, (Bound(old, EVERY_TASK_AT_ONCE if mode == "concurrent" else EACH_WAVE_AT_ONCE),)


def cluster_names(groups: Sequence[tuple[str, Market, int]]) -> dict[tuple[str, Market], str]:
    """Name the homogeneous clusters the paper's way: core (on-demand) and burst (spot).

    One group per market gets the bare name; two or three get -small/-medium/-large
    by size; more get the instance type as suffix.
    """
    names: dict[tuple[str, Market], str] = {}
    for market, stem in ((Market.ON_DEMAND, "core"), (Market.SPOT, "burst")):
        mine = sorted((g for g in groups if g[1] is market), key=lambda g: (g[2], g[0]))
        if len(mine) == 1:
            names[(mine[0][0], market)] = stem
        elif len(mine) in (2, 3):
            sizes = ["small", "large"] if len(mine) == 2 else ["small", "medium", "large"]
            for g, size in zip(mine, sizes, strict=True):
                names[(g[0], market)] = f"{stem}-{size}"
        else:
            for g in mine:
                names[(g[0], market)] = cluster_name(stem, g[0])
    return names


@dataclass(frozen=True, slots=True)
class PlanOptions:
    concurrent: bool = False
    budget_usd_per_hour: float | None = None
    effort: int = field(default=2)  # how many packing strategies to try (1 = seeds' algorithm only)
