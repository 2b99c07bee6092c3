"""What a plan's cost is measured against (plastic/core/planning/bounds.py): each bound says what it is the
least cost of and whether it bounds the plan; the plan's lower bound is never above its cost, in any mode.

The catalog is tests/fakes/catalogs.py's (the us-east-1 c5/m5/r5 rows)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.errors import BudgetExceededError
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt, TaskSpec, Workload
from plastic.core.planning.bounds import one_after_another_usd_per_hour
from plastic.core.planning.plan import (
    EACH_WAVE_AT_ONCE,
    EVERY_TASK_AT_ONCE,
    ONE_AFTER_ANOTHER,
    Bound,
    Plan,
    PlanOptions,
    plan_from_json,
    plan_to_json,
)
from plastic.core.planning.sizing import minimal_cluster, plan_workload
from tests.fakes.catalogs import CATALOG, CHEAPEST_ON_DEMAND, SHAPES

GIB = 1024


def plan_of(tasks: list[TaskSpec], *, budget: float | None = None, concurrent: bool = False) -> Plan:
    return plan_workload(Workload(tuple(tasks)), CATALOG,
                         options=PlanOptions(concurrent=concurrent, budget_usd_per_hour=budget))


def scatter(items: int) -> list[TaskSpec]:
    """A scatter of preemptible 1-vCPU steps merged on a reliable node (tests/chaos/data/square-sum)."""
    squares = [TaskSpec(f"square[{i}]", 1, 256, PREEMPTIBLE) for i in range(items)]
    return [*squares, TaskSpec("merge", 1, 256, RELIABLE, parents=tuple(t.id for t in squares))]


# ---------------------------------------------------------------- the bound of any cluster

def test_one_after_another_needs_an_on_demand_node_and_a_node_for_the_dearest_task():
    assert one_after_another_usd_per_hour([TaskSpec("a", 1, 256, PREEMPTIBLE)], SHAPES) == CHEAPEST_ON_DEMAND
    # 8 vCPUs, preemptible: a c5.2xlarge spot beside the c5.large on-demand (0.1496 + 0.085) beats a
    # c5.2xlarge on demand (0.34)
    big = TaskSpec("big", 8, 4 * GIB, PREEMPTIBLE)
    assert one_after_another_usd_per_hour([big], SHAPES) == pytest.approx(0.1496 + 0.085)
    # reliable, or escalating to on-demand after its preemptions: on demand only
    for preempt in (RELIABLE, Preempt(2)):
        assert one_after_another_usd_per_hour([TaskSpec("big", 8, 4 * GIB, preempt)], SHAPES) == pytest.approx(0.34)
    # the dearest task decides: one pinned to r5.4xlarge, on demand (1.008) or spot beside a c5.large
    pinned = TaskSpec("pinned", 1, 256, PREEMPTIBLE, instance_type="r5.4xlarge")
    assert one_after_another_usd_per_hour([pinned, big], SHAPES) == pytest.approx(0.085 + 0.3528)


def test_the_bound_of_any_cluster_is_below_the_cheapest_feasible_one():
    """The planner's cheapest feasible cluster (the floor a budget is refused under) is one such cluster."""
    tasks = [TaskSpec("big", 8, 4 * GIB, PREEMPTIBLE), *scatter(6)]
    cheapest = sum(n.shape.usd_per_hour for n in minimal_cluster(tasks, SHAPES))
    assert one_after_another_usd_per_hour(tasks, SHAPES) <= cheapest + 1e-9
    with pytest.raises(BudgetExceededError):
        plan_of(tasks, budget=one_after_another_usd_per_hour(tasks, SHAPES) * 0.99)


# ---------------------------------------------------------------- the plan's bounds, by mode

@pytest.mark.parametrize(("concurrent", "to_run"), [(True, EVERY_TASK_AT_ONCE), (False, EACH_WAVE_AT_ONCE)])
def test_an_unconstrained_plan_is_bound_by_running_its_tasks_at_once(concurrent, to_run):
    plan = plan_of(scatter(40), concurrent=concurrent)
    assert plan.mode == ("concurrent" if concurrent else "waves")
    first, *others = plan.bounds
    assert first == Bound(plan.lower_bound_usd_per_hour, to_run, applies=True)
    assert [b.to_run for b in others] == [ONE_AFTER_ANOTHER] and all(b.applies for b in others)
    assert others[0].usd_per_hour <= first.usd_per_hour <= plan.usd_per_hour + 1e-9
    assert plan.cost_over_lower_bound >= 1 - 1e-9


def test_a_budget_plan_whose_tasks_queue_is_not_bound_by_running_them_at_once():
    """50 squares at 0.2 $/h: tasks queue, and the at-once bound (what running them at once costs at least)
    is above the plan's cost, so it is no bound of it; the bound of any cluster is."""
    unconstrained = plan_of(scatter(50))
    plan = plan_of(scatter(50), budget=0.2)
    assert plan.mode == "budget" and plan.usd_per_hour <= 0.2 + 1e-9
    assert [(b.to_run, b.applies) for b in plan.bounds] == [(ONE_AFTER_ANOTHER, True), (EACH_WAVE_AT_ONCE, False)]
    binding, at_once = plan.bounds
    assert plan.lower_bound_usd_per_hour == binding.usd_per_hour <= plan.usd_per_hour
    assert at_once.usd_per_hour == unconstrained.lower_bound_usd_per_hour > plan.usd_per_hour
    assert 1 <= plan.cost_over_lower_bound == plan.usd_per_hour / binding.usd_per_hour


def test_a_budget_plan_that_still_runs_everything_at_once_keeps_the_at_once_bound():
    tasks = [TaskSpec(f"r{i}", 2, 2 * GIB, RELIABLE) for i in range(2)]
    unconstrained = plan_of(tasks, concurrent=True)
    plan = plan_of(tasks, budget=unconstrained.usd_per_hour * 10, concurrent=True)
    assert plan.mode == "concurrent" and plan.bounds[0].to_run == EVERY_TASK_AT_ONCE


@st.composite
def workloads(draw) -> list[TaskSpec]:
    n = draw(st.integers(1, 16))
    tasks: list[TaskSpec] = []
    for i in range(n):
        cpu = draw(st.sampled_from([1, 2, 4, 8, 16]))
        ram = draw(st.sampled_from([256, 4 * GIB, 30 * GIB, 100 * GIB]))
        pre = Preempt.from_json(draw(st.sampled_from([True, True, False, 2])))
        parents = tuple(f"t{j}" for j in range(max(0, i - draw(st.integers(0, 2))), i))
        tasks.append(TaskSpec(f"t{i}", cpu, ram, pre, parents=parents))
    return tasks


@settings(max_examples=40, deadline=None)
@given(workloads(), st.floats(0.0, 1.2), st.booleans())
def test_the_lower_bound_never_exceeds_the_plans_cost(tasks, fraction, concurrent):
    full = plan_of(tasks, concurrent=concurrent)
    floor = sum(n.shape.usd_per_hour for n in minimal_cluster(tasks, SHAPES))
    budget = min(floor, full.usd_per_hour) + abs(full.usd_per_hour - floor) * fraction
    for plan in (full, plan_of(tasks, budget=budget, concurrent=concurrent)):
        applying = [b for b in plan.bounds if b.applies]
        assert applying and plan.lower_bound_usd_per_hour == max(b.usd_per_hour for b in applying)
        assert plan.bounds[0].applies and plan.bounds[0].usd_per_hour == plan.lower_bound_usd_per_hour
        assert plan.lower_bound_usd_per_hour <= plan.usd_per_hour + 1e-9, plan.bounds
        assert [b.applies for b in plan.bounds] == sorted((b.applies for b in plan.bounds), reverse=True)
        if plan.mode != "budget":
            assert all(b.applies for b in plan.bounds)


# ---------------------------------------------------------------- the plan document

def test_the_bounds_go_through_the_plan_document():
    plan = plan_of(scatter(50), budget=0.2)
    doc = plan_to_json(plan)
    assert doc["lower_bound_usd_per_hour"] == pytest.approx(plan.lower_bound_usd_per_hour, abs=1e-6)
    assert doc["cost_over_lower_bound"] >= 1
    assert [(b["to_run"], b["bounds_this_plan"]) for b in doc["lower_bounds"]] == [
        (ONE_AFTER_ANOTHER, True), (EACH_WAVE_AT_ONCE, False)]
    assert "lower_bound_per_hour" not in doc and "ratio_to_lower_bound" not in doc
    back = plan_from_json(doc)
    assert [(b.to_run, b.applies) for b in back.bounds] == [(b.to_run, b.applies) for b in plan.bounds]
    assert back.lower_bound_usd_per_hour == pytest.approx(plan.lower_bound_usd_per_hour, abs=1e-6)


@pytest.mark.parametrize(("mode", "bound", "bounds"), [
    ("waves", 0.4029, ((0.4029, EACH_WAVE_AT_ONCE),)),
    ("concurrent", 0.6052, ((0.6052, EVERY_TASK_AT_ONCE),)),
    ("budget", 0.0, ()),  # its old figure was the at-once bound, maybe no bound of its cost: not taken
])
def test_a_plan_document_of_before_the_bounds_said_what_they_bound_still_reads(mode, bound, bounds):
    doc = {**plan_to_json(plan_of(scatter(3))), "mode": mode}
    for new in ("lower_bound_usd_per_hour", "cost_over_lower_bound", "lower_bounds"):
        del doc[new]
    doc.update(lower_bound_per_hour=bound or 0.4029, ratio_to_lower_bound=1.0276)
    plan = plan_from_json(doc)
    assert plan.lower_bound_usd_per_hour == bound
    assert [(b.usd_per_hour, b.to_run) for b in plan.bounds] == list(bounds)
