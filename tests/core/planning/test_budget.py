"""Budget mode (plastic/core/planning/sizing.py): the cheapest feasible cluster, grown within --budget-per-hour
with nodes of any shape of the catalog.

The catalog is tests/fakes/catalogs.py's: the same rows (types, capacities, on-demand and spot prices)
as the embedded us-east-1 catalog `plastic plan` uses by default.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.errors import BudgetExceededError
from plastic.core.model import (
    PREEMPTIBLE,
    RELIABLE,
    Market,
    Preempt,
    TaskSpec,
    Workload,
)
from plastic.core.planning.packing import shape_holds
from plastic.core.planning.plan import Plan, PlanOptions
from plastic.core.planning.sizing import minimal_cluster, plan_workload
from tests.fakes.catalogs import CATALOG, INSTANCE_TYPES, SHAPES

GIB = 1024
BY_TYPE = {t.name: t for t in INSTANCE_TYPES}


def square_sum(items: int) -> list[TaskSpec]:
    """tests/chaos/data/square-sum: a scatter of preemptible 1-vCPU steps, merged on a reliable node."""
    squares = [TaskSpec(f"square[{i}]", 1, 256, PREEMPTIBLE) for i in range(items)]
    return [*squares, TaskSpec("merge", 1, 256, RELIABLE, parents=tuple(t.id for t in squares))]


def budget_plan(tasks: list[TaskSpec], budget: float, *, concurrent: bool = False) -> Plan:
    return plan_workload(Workload(tuple(tasks)), CATALOG,
                         options=PlanOptions(concurrent=concurrent, budget_usd_per_hour=budget))


def vcpus(plan: Plan) -> int:
    return sum(n.capacity.vcpus for n in plan.nodes)


def queued(plan: Plan) -> int:
    note = next(a for a in plan.assumptions if a.startswith("budget-limited"))
    return int(note.split(": ", 1)[1].split(" of ", 1)[0])


def check_placement(plan: Plan, tasks: list[TaskSpec]) -> None:
    """Every task on exactly one node that may hold it on its own: capacity, market, pinned type."""
    by_id = {t.id: t for t in tasks}
    ids = [i for n in plan.nodes for i in n.task_ids]
    assert sorted(ids) == sorted(by_id) and len(ids) == len(set(ids))
    for n in plan.nodes:
        for i in n.task_ids:
            t = by_id[i]
            assert t.vcpus <= n.capacity.vcpus and t.ram_mib <= n.capacity.ram_mib, (i, n.id)
            if not t.preempt.preemptible:
                assert n.market is Market.ON_DEMAND, (i, n.id)
            if t.instance_type is not None:
                assert n.instance_type == t.instance_type, (i, n.id)


def floor_of(tasks: list[TaskSpec], *, concurrent: bool = False) -> float:
    """The cheapest feasible plan: minimal_cluster, or the unconstrained plan when that is cheaper."""
    full = plan_workload(Workload(tuple(tasks)), CATALOG, options=PlanOptions(concurrent=concurrent))
    return min(sum(n.shape.usd_per_hour for n in minimal_cluster(tasks, SHAPES)), full.usd_per_hour)


def test_square_sum_under_budget_buys_spot_capacity():
    # `plastic plan square-sum.cwl` with 50 items and --budget-per-hour 0.3 used to give
    # 2 x c5.large on-demand (4 vCPUs): only the full plan's nodes were considered, and its
    # c5.4xlarge spot nodes did not fit what the first c5.large left of the budget.
    tasks = square_sum(50)
    plan = budget_plan(tasks, 0.3)
    assert plan.mode == "budget"
    assert plan.usd_per_hour <= 0.3 + 1e-9
    spot = [n for n in plan.nodes if n.market is Market.SPOT]
    on_demand = [n for n in plan.nodes if n.market is Market.ON_DEMAND]
    assert spot
    assert vcpus(plan) > 2 * BY_TYPE["c5.large"].vcpus
    # one on-demand node for the reliable merge: the preemptible squares go to spot, which is cheaper
    assert [n.instance_type for n in on_demand] == ["c5.large"]
    check_placement(plan, tasks)
    assert queued(plan) < 50 - 2 * BY_TYPE["c5.large"].vcpus


def test_square_sum_capacity_grows_with_the_budget():
    # an example, not a law: see test_budget_plans_are_sound_for_any_budget
    tasks = square_sum(50)
    plans = [budget_plan(tasks, b) for b in (0.17, 0.2, 0.3, 0.5, 0.78)]
    sizes = [vcpus(p) for p in plans]
    assert sizes == sorted(sizes) and sizes[0] > 2 * BY_TYPE["c5.large"].vcpus
    assert all(p.usd_per_hour <= b + 1e-9 for p, b in zip(plans, (0.17, 0.2, 0.3, 0.5, 0.78), strict=True))
    waits = [queued(p) for p in plans if p.mode == "budget"]
    assert waits == sorted(waits, reverse=True)
    assert plans[-1].mode == "waves"  # 0.78 $/h pays for the unconstrained plan


def test_reliable_work_grows_on_demand_only_and_nothing_useless_is_bought():
    tasks = [TaskSpec(f"r{i}", 2, 2 * GIB, RELIABLE) for i in range(8)]
    plan = budget_plan(tasks, 0.4, concurrent=True)
    assert plan.mode == "budget" and plan.usd_per_hour <= 0.4 + 1e-9
    # four c5.large on-demand (0.34 $/h) run four tasks at once; the 0.06 $/h left would buy
    # a spot m5.large, which could host none of them
    assert all(n.market is Market.ON_DEMAND for n in plan.nodes)
    assert vcpus(plan) == 8 and queued(plan) == 4
    check_placement(plan, tasks)


def test_the_cheapest_feasible_cluster_holds_every_task():
    # ensure_reliable_capacity used to turn the spot node bought for the big task into a
    # c5.large on-demand node, leaving the task nowhere to run (and the error understated)
    tasks = [TaskSpec("big", 8, 4 * GIB, PREEMPTIBLE)]
    nodes = minimal_cluster(tasks, SHAPES)
    assert any(shape_holds(tasks[0], n.shape) for n in nodes)
    assert any(n.shape.reliable for n in nodes)
    with pytest.raises(BudgetExceededError) as err:
        budget_plan(tasks, 0.2)
    assert err.value.cheapest_feasible_usd_per_hour == pytest.approx(0.1496 + 0.085)
    plan = budget_plan(tasks, 0.3)
    check_placement(plan, tasks)


@st.composite
def workloads(draw) -> list[TaskSpec]:
    n = draw(st.integers(1, 24))
    tasks: list[TaskSpec] = []
    for i in range(n):
        cpu = draw(st.sampled_from([1, 1, 2, 4, 8, 16]))
        ram = draw(st.sampled_from([256, 1024, 4 * GIB, 8 * GIB, 30 * GIB, 100 * GIB]))
        pre = Preempt.from_json(draw(st.sampled_from([True, True, False, 2])))
        holding = sorted(name for name, it in BY_TYPE.items() if it.vcpus >= cpu and it.ram_mib >= ram)
        pin = draw(st.sampled_from(holding)) if holding and draw(st.integers(0, 9)) == 0 else None
        nparents = draw(st.integers(0, 3))
        parents = tuple(f"t{j}" for j in range(max(0, i - nparents), i))
        tasks.append(TaskSpec(f"t{i}", cpu, ram, pre, instance_type=pin, parents=parents))
    return tasks


@settings(max_examples=60, deadline=None)
@given(workloads(), st.floats(0.0, 1.1), st.booleans())
@pytest.mark.slow
def test_budget_plans_are_sound_for_any_budget(tasks, fraction, concurrent):
    full = plan_workload(Workload(tuple(tasks)), CATALOG, options=PlanOptions(concurrent=concurrent))
    floor = floor_of(tasks, concurrent=concurrent)
    for t in tasks:  # the cheapest feasible cluster can run every task
        assert any(shape_holds(t, n.shape) for n in minimal_cluster(tasks, SHAPES))
    budget = floor + (full.usd_per_hour - floor) * fraction
    plan = budget_plan(tasks, budget, concurrent=concurrent)
    assert plan.usd_per_hour <= budget + 1e-9
    assert plan.mode == ("budget" if full.usd_per_hour > budget + 1e-9 else full.mode)
    assert any(n.market is Market.ON_DEMAND for n in plan.nodes)
    check_placement(plan, tasks)
    if plan.mode == "budget":
        assert 0 <= queued(plan) <= len(tasks)


@settings(max_examples=30, deadline=None)
@given(workloads(), st.floats(0.01, 0.99))
def test_a_budget_below_the_cheapest_feasible_plan_is_one_line(tasks, fraction):
    floor = floor_of(tasks)
    with pytest.raises(BudgetExceededError) as err:
        budget_plan(tasks, floor * fraction)
    assert err.value.field == "--budget-per-hour" and err.value.binding_constraint == "budget"
    assert err.value.cheapest_feasible_usd_per_hour == pytest.approx(floor)
    assert "\n" not in str(err.value) and "cheapest feasible plan" in str(err.value)
