"""Properties of solve() on random workloads, checked against independent rules.

Every check here recomputes what it needs from the tasks and the shapes alone
(capacity sums, market and pin rules, enumeration of shapes), never from the
planner's internals.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from plastic.core.errors import UnplaceableTaskError
from plastic.core.model import (
    PREEMPTIBLE,
    RELIABLE,
    Market,
    Preempt,
    Reserve,
    TaskSpec,
    node_shapes,
)
from plastic.core.planning.lower_bound import lower_bound
from plastic.core.planning.planner import solve
from tests.fakes.catalogs import CATALOG, TYPE_NAMES

OD = Market.ON_DEMAND
PREEMPTS = [RELIABLE, PREEMPTIBLE, Preempt(1), Preempt(2), Preempt(3)]

# PLASTIC_EXAMPLES_SCALE=10 runs every property ten times longer (a deeper hunt for bugs)
SCALE = float(os.environ.get("PLASTIC_EXAMPLES_SCALE", "1"))


def examples(n: int) -> settings:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, suppress_health_check=[HealthCheck.too_slow])


SETTINGS = examples(60)


# ------------------------------------------------------------ independent oracles

def can_host(task: TaskSpec, s) -> bool:
    """The placement rules, written out: room, market, pin."""
    return (s.usable.vcpus >= task.vcpus and s.usable.ram_mib >= task.ram_mib
            and (task.preempt.max_preemptions != 0 or s.market is OD)
            and (task.instance_type is None or s.instance_type.name == task.instance_type))


def placeable(task: TaskSpec, shapes) -> bool:
    return any(can_host(task, s) for s in shapes)


def describe(nodes) -> list:
    return [(n.shape.name, n.shape.market.value, [t.id for t in n.tasks]) for n in nodes]


# ------------------------------------------------------------ strategies

@st.composite
def task_specs(draw, i: int, palette: bool = False) -> TaskSpec:
    if palette:  # few distinct sizes: many ties for the orderings to break
        vcpus = draw(st.sampled_from([1, 2, 4, 8, 16]))
        ram = draw(st.sampled_from([512, 2048, 4096, 16384, 65536]))
    else:
        vcpus = draw(st.one_of(st.integers(1, 4), st.integers(1, 16)))
        ram = draw(st.one_of(st.integers(256, 8192), st.integers(256, 65536)))
    preempt = draw(st.sampled_from(PREEMPTS))
    pin = draw(st.one_of(st.none(), st.none(), st.none(), st.none(), st.sampled_from(TYPE_NAMES)))
    return TaskSpec(f"t{i}", vcpus, ram, preempt, instance_type=pin)


@st.composite
def workloads(draw, max_tasks: int = 60):
    n = draw(st.integers(0, max_tasks))
    palette = draw(st.booleans())
    tasks = [draw(task_specs(i, palette)) for i in range(n)]
    reserve = draw(st.one_of(st.just(Reserve()), st.builds(Reserve, st.integers(0, 1), st.integers(0, 1024))))
    return tasks, reserve


@st.composite
def placeable_workloads(draw, max_tasks: int = 60):
    """Workloads whose every task fits some shape (so solve() must succeed)."""
    tasks, reserve = draw(workloads(max_tasks))
    shapes = node_shapes(CATALOG, reserve)
    return [t for t in tasks if placeable(t, shapes)], reserve


# ------------------------------------------------------------ the properties

def check_plan(sol, tasks, shapes):
    nodes = sol.nodes
    note(f"plan: {describe(nodes)}")
    # (1) no node over its usable capacity, and every node's shape is one of the offered shapes
    for n in nodes:
        assert n.shape in shapes
        assert sum(t.vcpus for t in n.tasks) <= n.shape.usable.vcpus
        assert sum(t.ram_mib for t in n.tasks) <= n.shape.usable.ram_mib
    # (2) every task placed exactly once (by identity of id and value)
    placed = [t for n in nodes for t in n.tasks]
    assert sorted(t.id for t in placed) == sorted(t.id for t in tasks)
    by_id = {t.id: t for t in tasks}
    assert all(by_id[t.id] == t for t in placed)
    # (3) reliable tasks only on on-demand nodes; pins respected
    for n in nodes:
        for t in n.tasks:
            if t.preempt == RELIABLE:
                assert n.shape.market is OD, (t.id, n.shape.name, n.shape.market)
            if t.instance_type is not None:
                assert n.shape.name == t.instance_type
    # (5) never below the LP bound, which is the bound of these tasks over these shapes
    lb = lower_bound(tasks, shapes).usd_per_hour
    assert sol.bound.usd_per_hour == pytest.approx(lb, rel=1e-9, abs=1e-12)
    assert sol.usd_per_hour >= lb - 1e-9
    assert sol.usd_per_hour == pytest.approx(sum(n.shape.usd_per_hour for n in nodes))
    # (6) at least one on-demand node
    assert any(n.shape.market is OD for n in nodes)


@SETTINGS
@given(placeable_workloads())
@pytest.mark.slow
def test_plans_are_valid(workload):
    tasks, reserve = workload
    shapes = node_shapes(CATALOG, reserve)
    sol = solve(tasks, shapes)
    check_plan(sol, tasks, shapes)


@SETTINGS
@given(placeable_workloads(max_tasks=40))
@pytest.mark.slow
def test_seeds_plans_are_valid_and_never_cheaper_than_the_planner(workload):
    tasks, reserve = workload
    shapes = node_shapes(CATALOG, reserve)
    seeds = solve(tasks, shapes, effort=1)
    check_plan(seeds, tasks, shapes)
    full = solve(tasks, shapes, effort=2)
    assert full.usd_per_hour <= seeds.usd_per_hour + 1e-9, (describe(full.nodes), describe(seeds.nodes))


@SETTINGS
@given(workloads())
def test_unplaceable_exactly_when_some_task_fits_no_shape(workload):
    # (2) either every task is placed, or solve() names a task that truly fits nowhere
    tasks, reserve = workload
    shapes = node_shapes(CATALOG, reserve)
    unplaceable_ids = {t.id for t in tasks if not placeable(t, shapes)}
    try:
        sol = solve(tasks, shapes)
    except UnplaceableTaskError as e:
        assert e.task_id in unplaceable_ids, (e.task_id, str(e))
        culprit = next(t for t in tasks if t.id == e.task_id)
        expected_field = "instanceType" if culprit.instance_type is not None else None
        if expected_field:
            assert e.field == expected_field
        else:
            assert e.field in ("vcpus", "vram", "preempt")
            assert e.field in str(e)
        return
    assert not unplaceable_ids, f"solve() accepted unplaceable tasks {sorted(unplaceable_ids)}"
    check_plan(sol, tasks, shapes)


@examples(50)
@given(placeable_workloads(max_tasks=50), st.data())
@pytest.mark.slow
def test_cost_does_not_depend_on_task_order(workload, data):
    # (4) the same tasks in any order: a plan of the same cost
    tasks, reserve = workload
    shapes = node_shapes(CATALOG, reserve)
    shuffled = data.draw(st.permutations(tasks), label="permutation")
    a = solve(tasks, shapes)
    b = solve(shuffled, shapes)
    assert a.usd_per_hour == pytest.approx(b.usd_per_hour, abs=1e-9, rel=0), \
        (a.strategy, describe(a.nodes), b.strategy, describe(b.nodes))
    s1 = solve(tasks, shapes, effort=1)
    s2 = solve(shuffled, shapes, effort=1)
    assert s1.usd_per_hour == pytest.approx(s2.usd_per_hour, abs=1e-9, rel=0)


@SETTINGS
@given(placeable_workloads(max_tasks=30))
@pytest.mark.slow
def test_escalating_tasks_have_on_demand_room(workload):
    # the paper's guarantee for preempt=N: an on-demand node whose usable capacity holds the task
    tasks, reserve = workload
    shapes = node_shapes(CATALOG, reserve)
    assume(any(t.preempt.max_preemptions not in (None, 0) for t in tasks))
    sol = solve(tasks, shapes)
    for t in tasks:
        if t.preempt.max_preemptions not in (None, 0):
            assert any(n.shape.market is OD and can_host(t, n.shape) for n in sol.nodes), \
                (t, describe(sol.nodes))


@examples(40)
@given(st.lists(st.tuples(st.integers(1, 16), st.integers(256, 65536)), min_size=1, max_size=40))
def test_reliable_only_plans_use_on_demand_only(ds):
    tasks = [TaskSpec(f"t{i}", c, r, RELIABLE) for i, (c, r) in enumerate(ds)]
    sol = solve(tasks, node_shapes(CATALOG))
    assert all(n.shape.market is OD for n in sol.nodes)


@examples(40)
@given(st.lists(st.tuples(st.integers(1, 16), st.integers(256, 65536)), min_size=1, max_size=40))
def test_preemptible_only_plans_leave_only_the_cheapest_on_demand_node_empty(ds):
    # nothing needs on-demand capacity except the one reliable node
    tasks = [TaskSpec(f"t{i}", c, r, PREEMPTIBLE) for i, (c, r) in enumerate(ds)]
    shapes = node_shapes(CATALOG)
    sol = solve(tasks, shapes)
    check_plan(sol, tasks, shapes)
    od = [n for n in sol.nodes if n.shape.market is OD]
    assert len(od) >= 1
    # an empty on-demand node would be the cheapest one
    for n in od:
        if not n.tasks:
            assert n.shape.usd_per_hour == min(s.usd_per_hour for s in shapes if s.market is OD)
