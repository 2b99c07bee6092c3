"""plastic.core.planning.plan: the preemptible tasks a static cluster has no reliable home for."""

from __future__ import annotations

from plastic.core.model import (
    PREEMPTIBLE,
    RELIABLE,
    Market,
    Preempt,
    Resources,
    TaskSpec,
)
from plastic.core.planning.plan import Plan, PlannedNode, beyond_on_demand, static_risk


def _node(name: str, market: Market, vcpus: int, ram_mib: int, itype: str = "t.x") -> PlannedNode:
    return PlannedNode(name, "core" if market is Market.ON_DEMAND else "burst", itype, market, 0.1,
                       Resources(vcpus, ram_mib), ())


def _plan(tasks: list[TaskSpec], nodes: list[PlannedNode]) -> Plan:
    return Plan(tuple(tasks), tuple(nodes), 1.0, 2.0, 0.5, "concurrent")


def test_preemptible_tasks_bigger_than_every_on_demand_node_are_named_by_step():
    nodes = [_node("c1", Market.ON_DEMAND, 2, 4096), _node("b1", Market.SPOT, 16, 32768),
             _node("c2", Market.ON_DEMAND, 4, 2048)]
    tasks = [TaskSpec("align[0]", 16, 30000, PREEMPTIBLE), TaskSpec("align[1]", 16, 30000, Preempt(2)),
             TaskSpec("sort[0]", 4, 4096, PREEMPTIBLE),  # 4 vCPUs on c2, 4096 MiB on c1: no one node holds both
             TaskSpec("count[0]", 2, 4096, PREEMPTIBLE),  # fits c1
             TaskSpec("merge", 16, 30000, RELIABLE)]  # reliable: the planner gives it an on-demand node or fails
    assert [t.id for t in beyond_on_demand(_plan(tasks, nodes))] == ["align[0]", "align[1]", "sort[0]"]
    risk = static_risk(_plan(tasks, nodes))
    assert risk is not None and "3 preemptible task(s) of align, sort fit no on-demand node" in risk


def test_a_pinned_task_counts_only_on_demand_nodes_of_its_type():
    tasks = [TaskSpec("gpu[0]", 2, 1024, PREEMPTIBLE, instance_type="g.big")]
    assert beyond_on_demand(_plan(tasks, [_node("c1", Market.ON_DEMAND, 8, 8192, "t.x")]))
    assert not beyond_on_demand(_plan(tasks, [_node("c1", Market.ON_DEMAND, 8, 8192, "g.big")]))


def test_no_risk_when_every_preemptible_task_fits_an_on_demand_node_and_many_steps_are_cut_short():
    nodes = [_node("c1", Market.ON_DEMAND, 4, 8192)]
    assert static_risk(_plan([TaskSpec("a[0]", 4, 8192, PREEMPTIBLE)], nodes)) is None
    assert static_risk(_plan([TaskSpec("a", 1, 1, PREEMPTIBLE)], [])) is not None  # no on-demand node at all
    many = [TaskSpec(f"s{i}", 8, 1024, PREEMPTIBLE) for i in range(5)]
    assert "5 preemptible task(s) of s0, s1, s2 and 2 more fit" in static_risk(_plan(many, nodes))
