"""plastic.core.planning.planner: solve() and its public improvement steps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.errors import PlanningError, UnplaceableTaskError
from plastic.core.model import (
    PREEMPTIBLE,
    RELIABLE,
    Catalog,
    InstanceType,
    Market,
    Preempt,
    Reserve,
    TaskSpec,
    node_shapes,
)
from plastic.core.planning.choosers import bottleneck_values, dual_values, lookahead_chooser, seeds_order
from plastic.core.planning.lower_bound import lower_bound
from plastic.core.planning.packing import PackedNode, allowed_on, shape_holds
from plastic.core.planning.planner import check_placeable, ensure_reliable_capacity, right_size, solve, sort_nodes
from tests.fakes.catalogs import CATALOG, CHEAPEST_ON_DEMAND, SHAPES, TYPE_NAMES, shape

GIB = 1024
OD, SPOT = Market.ON_DEMAND, Market.SPOT


def cost(nodes) -> float:
    return sum(n.shape.usd_per_hour for n in nodes)


def assert_valid_plan(nodes, tasks):
    """Capacity, markets, pins, each task exactly once, an on-demand node."""
    placed = [t.id for n in nodes for t in n.tasks]
    assert sorted(placed) == sorted(t.id for t in tasks)
    for n in nodes:
        assert sum(t.vcpus for t in n.tasks) <= n.shape.usable.vcpus
        assert sum(t.ram_mib for t in n.tasks) <= n.shape.usable.ram_mib
        for t in n.tasks:
            assert t.preempt.preemptible or n.shape.market is OD, (t, n.shape)
            assert t.instance_type is None or t.instance_type == n.shape.name, (t, n.shape)
    assert any(n.shape.market is OD for n in nodes)


def escalation_covered(nodes, task) -> bool:
    return any(n.shape.market is OD and n.shape.usable.holds(task.demand)
               and (task.instance_type is None or n.shape.name == task.instance_type) for n in nodes)


def layout(nodes):
    return sorted((n.shape.name, n.shape.market.value, tuple(sorted(t.id for t in n.tasks))) for n in nodes)


# ------------------------------------------------------------ single tasks

@pytest.mark.parametrize("task, expected", [
    # reliable: the cheapest on-demand type that holds it
    (TaskSpec("a", 1, 1024, RELIABLE), [("c5.large", "on-demand", ("a",))]),
    (TaskSpec("a", 3, 12 * GIB, RELIABLE), [("m5.xlarge", "on-demand", ("a",))]),
    (TaskSpec("a", 8, 40 * GIB, RELIABLE), [("r5.2xlarge", "on-demand", ("a",))]),
    (TaskSpec("a", 16, 100 * GIB, RELIABLE), [("r5.4xlarge", "on-demand", ("a",))]),
    # small preemptible: cheaper to host it on the one on-demand node than to buy spot as well
    (TaskSpec("a", 1, 1024, PREEMPTIBLE), [("c5.large", "on-demand", ("a",))]),
    # big preemptible: spot r5.4xlarge (0.3528) + the cheapest on-demand node (0.085)
    # beats r5.4xlarge on demand (1.008)
    (TaskSpec("a", 16, 100 * GIB, PREEMPTIBLE),
     [("c5.large", "on-demand", ()), ("r5.4xlarge", "spot", ("a",))]),
])
@pytest.mark.parametrize("effort", [1, 2])
def test_single_task(task, expected, effort):
    sol = solve([task], SHAPES, effort=effort)
    assert layout(sol.nodes) == expected
    assert_valid_plan(sol.nodes, [task])


def test_empty_task_list_buys_exactly_the_reliable_node():
    for effort in (1, 2):
        sol = solve([], SHAPES, effort=effort)
        assert len(sol.nodes) == 1
        (node,) = sol.nodes
        assert node.shape.market is OD and node.tasks == ()
        assert sol.usd_per_hour == pytest.approx(CHEAPEST_ON_DEMAND)
        assert node.shape.name == "c5.large"
        assert sol.bound.usd_per_hour == pytest.approx(CHEAPEST_ON_DEMAND)


def test_all_preemptible_still_has_an_on_demand_node():
    tasks = [TaskSpec(f"t{i}", 4, 16 * GIB, PREEMPTIBLE) for i in range(30)]
    sol = solve(tasks, SHAPES)
    assert_valid_plan(sol.nodes, tasks)
    assert sum(n.shape.market is OD for n in sol.nodes) >= 1
    # and most capacity is bought on spot
    assert sum(n.shape.usable.vcpus for n in sol.nodes if n.shape.market is SPOT) >= 100


def test_reliable_tasks_never_on_spot_in_a_mix():
    tasks = [TaskSpec(f"r{i}", 2, 3 * GIB, RELIABLE) for i in range(10)] + \
        [TaskSpec(f"p{i}", 2, 3 * GIB, PREEMPTIBLE) for i in range(40)]
    for effort in (1, 2):
        sol = solve(tasks, SHAPES, effort=effort)
        assert_valid_plan(sol.nodes, tasks)
        on = {t.id: n.shape.market for n in sol.nodes for t in n.tasks}
        assert all(on[f"r{i}"] is OD for i in range(10))
        assert any(on[f"p{i}"] is SPOT for i in range(40))


# ------------------------------------------------------------ pinned types

def test_pinned_tasks_only_on_their_type():
    tasks = [TaskSpec(f"pin{i}", 1, 1024, PREEMPTIBLE, instance_type="m5.2xlarge") for i in range(5)] + \
        [TaskSpec(f"rpin{i}", 1, 1024, RELIABLE, instance_type="r5.xlarge") for i in range(3)] + \
        [TaskSpec(f"free{i}", 1, 1024, PREEMPTIBLE) for i in range(10)]
    for effort in (1, 2):
        sol = solve(tasks, SHAPES, effort=effort)
        assert_valid_plan(sol.nodes, tasks)
        for n in sol.nodes:
            for t in n.tasks:
                if t.id.startswith("pin"):
                    assert n.shape.name == "m5.2xlarge"
                if t.id.startswith("rpin"):
                    assert (n.shape.name, n.shape.market) == ("r5.xlarge", OD)


def test_pinned_type_too_small():
    t = TaskSpec("big", 4, 1024, PREEMPTIBLE, instance_type="c5.large")
    with pytest.raises(UnplaceableTaskError) as e:
        solve([TaskSpec("ok", 1, 256, PREEMPTIBLE), t], SHAPES)
    assert e.value.task_id == "big"
    assert e.value.field == "instanceType"
    assert "instanceType" in str(e.value)


def test_pinned_type_unknown():
    with pytest.raises(UnplaceableTaskError) as e:
        solve([TaskSpec("u", 1, 256, RELIABLE, instance_type="x1e.32xlarge")], SHAPES)
    assert e.value.task_id == "u" and e.value.field == "instanceType" and "x1e.32xlarge" in str(e.value)


@pytest.mark.parametrize("task, word", [
    (TaskSpec("c", 17, 1024, PREEMPTIBLE), "vcpus"),
    (TaskSpec("c", 64, 1024, RELIABLE), "vcpus"),
    (TaskSpec("r", 2, 128 * GIB + 1, PREEMPTIBLE), "vram"),
    (TaskSpec("r", 1, 1024 * GIB, RELIABLE), "vram"),
])
def test_task_larger_than_every_type(task, word):
    with pytest.raises(UnplaceableTaskError) as e:
        solve([task], SHAPES)
    assert word in str(e.value)
    assert e.value.field == word
    assert e.value.task_id == task.id
    assert isinstance(e.value, PlanningError) and e.value.exit_code == 2


def test_check_placeable_accepts_the_largest_task():
    check_placeable([TaskSpec("x", 16, 128 * GIB, RELIABLE)], SHAPES)


# ------------------------------------------------------------ reserve

def test_reserve_shrinks_usable_capacity():
    whole = TaskSpec("whole", 16, 128 * GIB, RELIABLE)  # exactly r5.4xlarge
    sol = solve([whole], node_shapes(CATALOG))
    assert layout(sol.nodes) == [("r5.4xlarge", "on-demand", ("whole",))]
    for reserve in (Reserve(1, 0), Reserve(0, 1), Reserve(1, 1024)):
        with pytest.raises(UnplaceableTaskError):
            solve([whole], node_shapes(CATALOG, reserve))


def test_reserve_changes_the_chosen_type():
    # 2 vCPU fits c5.large raw; with a 1-vCPU reserve it needs a 4-vCPU type
    t = TaskSpec("t", 2, 1024, RELIABLE)
    assert layout(solve([t], node_shapes(CATALOG)).nodes) == [("c5.large", "on-demand", ("t",))]
    sol = solve([t], node_shapes(CATALOG, Reserve(1, 512)))
    assert layout(sol.nodes) == [("c5.xlarge", "on-demand", ("t",))]
    assert sol.nodes[0].shape.usable.vcpus == 3 and sol.nodes[0].shape.usable.ram_mib == 8 * GIB - 512


def test_reserve_drops_types_left_without_capacity():
    shapes = node_shapes(CATALOG, Reserve(2, 0))  # every *.large has no vCPU left
    assert not any(s.name.endswith(".large") for s in shapes)
    sol = solve([], shapes)
    assert layout(sol.nodes) == [("c5.xlarge", "on-demand", ())]


# ------------------------------------------------------------ escalating tasks (preempt = N)

def test_escalating_task_gets_an_on_demand_node_that_holds_it():
    esc = TaskSpec("esc", 8, 30 * GIB, Preempt(2))
    small = [TaskSpec(f"s{i}", 1, 512, RELIABLE) for i in range(2)]
    tasks = [esc, *small]
    for effort in (1, 2):
        sol = solve(tasks, SHAPES, effort=effort)
        assert_valid_plan(sol.nodes, tasks)
        assert escalation_covered(sol.nodes, esc)


def test_ensure_reliable_capacity_upgrades_or_adds_the_cheapest_way():
    esc = TaskSpec("esc", 4, 10 * GIB, Preempt(2))
    nodes = [PackedNode(shape("m5.xlarge", SPOT), (esc,))]
    out = ensure_reliable_capacity(nodes, SHAPES, [esc])
    # options: add m5.xlarge od (0.192) or turn the spot node into m5.xlarge od (+0.1267): the latter
    assert layout(out) == [("m5.xlarge", "on-demand", ("esc",))]


def test_ensure_reliable_capacity_adds_the_cheapest_node_when_nothing_is_on_demand():
    t = TaskSpec("p", 16, 100 * GIB, PREEMPTIBLE)
    out = ensure_reliable_capacity([PackedNode(shape("r5.4xlarge", SPOT), (t,))], SHAPES, [t])
    assert layout(out) == [("c5.large", "on-demand", ()), ("r5.4xlarge", "spot", ("p",))]


def test_ensure_reliable_capacity_keeps_a_sufficient_plan():
    esc = TaskSpec("esc", 4, 10 * GIB, Preempt(1))
    nodes = [PackedNode(shape("m5.2xlarge", OD), ()), PackedNode(shape("m5.xlarge", SPOT), (esc,))]
    assert ensure_reliable_capacity(nodes, SHAPES, [esc]) == nodes


def test_ensure_reliable_capacity_pinned_escalating_task():
    esc = TaskSpec("esc", 1, 1024, Preempt(2), instance_type="r5.xlarge")
    nodes = [PackedNode(shape("r5.xlarge", SPOT), (esc,)), PackedNode(shape("c5.4xlarge", OD), ())]
    out = ensure_reliable_capacity(nodes, SHAPES, [esc])
    assert escalation_covered(out, esc)


def test_ensure_reliable_capacity_raises_when_no_on_demand_type_is_big_enough():
    cat = Catalog((InstanceType("small", 2, 4 * GIB, 0.1, 0.03), InstanceType("spotbig", 16, 64 * GIB, 1.0, 0.3)))
    shapes = tuple(s for s in node_shapes(cat) if not (s.name == "spotbig" and s.market is OD))
    esc = TaskSpec("esc", 8, 8 * GIB, Preempt(2))
    with pytest.raises(PlanningError) as e:
        ensure_reliable_capacity([PackedNode(shapes[-1], (esc,))], shapes, [esc])
    assert e.value.field == "preempt"


def test_ensure_reliable_capacity_covers_every_escalating_task():
    """Two escalating tasks of different shapes plus a RAM-heavy filler on one spot node.

    Covering t1 (8 vCPU) adds an empty on-demand c5.2xlarge; covering t2 (4 vCPU, 20 GiB)
    must not then shrink that node below t1.
    """
    t1 = TaskSpec("t1", 8, 1 * GIB, Preempt(2))
    t2 = TaskSpec("t2", 4, 20 * GIB, Preempt(2))
    filler = TaskSpec("f", 4, 100 * GIB, PREEMPTIBLE)
    nodes = [PackedNode(shape("r5.4xlarge", SPOT), (t1, t2, filler))]
    out = ensure_reliable_capacity(nodes, SHAPES, [t1, t2, filler])
    assert escalation_covered(out, t2)
    assert escalation_covered(out, t1), layout(out)


def test_ensure_reliable_capacity_keeps_a_pinned_escalating_task_covered():
    """Covering `pin` turns the reliable c5.large into an on-demand m5.xlarge; covering `big`
    (20 GiB) must not then turn that node into an r5.xlarge, which `pin` may not use."""
    pin = TaskSpec("pin", 2, 512, Preempt(1), instance_type="m5.xlarge")
    big = TaskSpec("big", 1, 20 * GIB, Preempt(1))
    rel = TaskSpec("r", 1, 512, RELIABLE)
    nodes = [PackedNode(shape("c5.large", OD), (rel,)), PackedNode(shape("r5.xlarge", SPOT), (big,)),
             PackedNode(shape("m5.xlarge", SPOT), (pin,))]
    out = ensure_reliable_capacity(nodes, SHAPES, [pin, big, rel])
    assert escalation_covered(out, big)
    assert escalation_covered(out, pin), layout(out)


def test_solve_covers_a_pinned_escalating_task():
    pin = TaskSpec("pin", 2, 512, Preempt(1), instance_type="m5.xlarge")
    big = TaskSpec("big", 1, 20 * GIB, Preempt(1))
    rel = TaskSpec("r", 1, 512, RELIABLE)
    for effort in (1, 2):
        sol = solve([pin, big, rel], SHAPES, effort=effort)
        assert_valid_plan(sol.nodes, [pin, big, rel])
        assert escalation_covered(sol.nodes, pin) and escalation_covered(sol.nodes, big), layout(sol.nodes)


def test_solve_covers_every_escalating_task():
    t1 = TaskSpec("t1", 8, 1 * GIB, Preempt(2))
    t2 = TaskSpec("t2", 4, 20 * GIB, Preempt(2))
    filler = TaskSpec("f", 4, 100 * GIB, PREEMPTIBLE)
    for effort in (1, 2):
        sol = solve([t1, t2, filler], SHAPES, effort=effort)
        assert_valid_plan(sol.nodes, [t1, t2, filler])
        assert escalation_covered(sol.nodes, t1) and escalation_covered(sol.nodes, t2), layout(sol.nodes)


# ------------------------------------------------------------ right_size

def test_right_size_shrinks_an_oversized_node():
    tasks = (TaskSpec("a", 1, 1024, PREEMPTIBLE), TaskSpec("b", 1, 2048, PREEMPTIBLE))
    out = right_size([PackedNode(shape("r5.4xlarge", SPOT), tasks)], SHAPES)
    assert layout(out) == [("m5.large", "spot", ("a", "b"))]


def test_right_size_respects_market_and_pin():
    rel = (TaskSpec("r", 1, 1024, RELIABLE),)
    assert layout(right_size([PackedNode(shape("m5.4xlarge", OD), rel)], SHAPES)) == \
        [("c5.large", "on-demand", ("r",))]
    pin = (TaskSpec("p", 1, 1024, PREEMPTIBLE, instance_type="m5.4xlarge"),)
    assert layout(right_size([PackedNode(shape("m5.4xlarge", OD), pin)], SHAPES)) == \
        [("m5.4xlarge", "spot", ("p",))]


def test_right_size_keeps_full_node():
    full = (TaskSpec("a", 16, 128 * GIB, PREEMPTIBLE),)
    node = PackedNode(shape("r5.4xlarge", SPOT), full)
    assert right_size([node], SHAPES) == [node]


raw_task = st.tuples(st.integers(1, 8), st.integers(256, 32 * GIB),
                     st.sampled_from([RELIABLE, PREEMPTIBLE, Preempt(2)]),
                     st.one_of(st.none(), st.none(), st.sampled_from(TYPE_NAMES)))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(SHAPES), st.lists(raw_task, max_size=6)), max_size=6))
def test_right_size_never_raises_cost_and_stays_within_capacity(raw_nodes):
    # build valid nodes: keep tasks while they fit and are allowed on the node's shape
    nodes, n_id = [], 0
    for s, raw in raw_nodes:
        kept, cpu, ram = [], 0, 0
        for c, r, p, pin in raw:
            t = TaskSpec(f"t{n_id}", c, r, p, instance_type=pin)
            n_id += 1
            if cpu + c <= s.usable.vcpus and ram + r <= s.usable.ram_mib and \
                    (p.preemptible or s.market is OD) and (pin is None or pin == s.name):
                kept.append(t)
                cpu, ram = cpu + c, ram + r
        nodes.append(PackedNode(s, tuple(kept)))
    out = right_size(nodes, SHAPES)
    assert len(out) == len(nodes)
    for before, after in zip(nodes, out):
        assert after.tasks == before.tasks
        assert after.shape.usd_per_hour <= before.shape.usd_per_hour
    assert cost(out) <= cost(nodes) + 1e-12
    for n in out:
        assert sum(t.vcpus for t in n.tasks) <= n.shape.usable.vcpus
        assert sum(t.ram_mib for t in n.tasks) <= n.shape.usable.ram_mib
        for t in n.tasks:
            assert t.preempt.preemptible or n.shape.market is OD
            assert t.instance_type is None or t.instance_type == n.shape.name
    # idempotent, and nothing cheaper holds any node's contents
    assert right_size(out, SHAPES) == out
    for n in out:
        for s in SHAPES:
            if s.usd_per_hour < n.shape.usd_per_hour:
                assert not (s.usable.holds(n.used) and all(
                    (t.preempt.preemptible or s.market is OD) and (t.instance_type in (None, s.name))
                    for t in n.tasks))


# ------------------------------------------------------------ strategies

def test_seeds_order_puts_reliable_first_then_by_needed_price():
    tasks = [TaskSpec("p-small", 1, 256, PREEMPTIBLE), TaskSpec("r-small", 1, 256, RELIABLE),
             TaskSpec("p-big", 16, 100 * GIB, PREEMPTIBLE), TaskSpec("r-big", 8, 8 * GIB, RELIABLE)]
    assert [t.id for t in seeds_order(tasks, SHAPES)] == ["r-big", "r-small", "p-big", "p-small"]


WORKLOADS = {
    "mixed": [TaskSpec(f"t{i}", 1 + i % 7, 512 + (i * 3571) % 30000,
                       (RELIABLE, PREEMPTIBLE, Preempt(2))[i % 3]) for i in range(60)],
    "memory-heavy": [TaskSpec(f"m{i}", 1, 20 * GIB + i * 97, PREEMPTIBLE) for i in range(25)],
    "cpu-heavy": [TaskSpec(f"c{i}", 3, 1024, PREEMPTIBLE) for i in range(50)],
    "reliable": [TaskSpec(f"r{i}", 1 + i % 4, 1024 * (1 + i % 5), RELIABLE) for i in range(40)],
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_planner_never_worse_than_seeds(name):
    tasks = WORKLOADS[name]
    seeds = solve(tasks, SHAPES, effort=1)
    full = solve(tasks, SHAPES, effort=2)
    assert seeds.strategy == "seeds"
    assert_valid_plan(seeds.nodes, tasks)
    assert_valid_plan(full.nodes, tasks)
    assert full.usd_per_hour <= seeds.usd_per_hour + 1e-9
    assert full.usd_per_hour >= full.bound.usd_per_hour - 1e-9


def test_lookahead_beats_seeds_on_many_small_preemptible_tasks():
    # seeds buys one cheapest-holding node per opening task; at dual prices a larger spot
    # type is cheaper per vCPU (c5.4xlarge spot: 0.01445/vCPU vs m5.large spot 0.0163)
    tasks = [TaskSpec(f"t{i}", 2, 2 * GIB, PREEMPTIBLE) for i in range(64)]
    seeds = solve(tasks, SHAPES, effort=1)
    full = solve(tasks, SHAPES, effort=2)
    assert full.usd_per_hour < seeds.usd_per_hour - 1e-6
    assert full.usd_per_hour <= 1.02 * full.bound.usd_per_hour + CHEAPEST_ON_DEMAND


def test_solve_reuses_a_given_bound():
    tasks = WORKLOADS["mixed"]
    lb = lower_bound(tasks, SHAPES)
    assert solve(tasks, SHAPES, bound=lb).bound is lb


# ------------------------------------------------------------ the look-ahead's shortcuts are exact

def _choose_by_filling_every_shape(task, i, ordered, values, head, spread, shapes):
    """The look-ahead's rule written out plainly: fill every shape that holds the task, no bound."""
    start = i + 1
    window = list(ordered[start:start + head])
    rest = len(ordered) - start
    if spread and rest > head:
        step = max(1, (rest - head) // spread)
        window += ordered[start + head:start + head + step * spread:step]
    best = None
    for s in sorted(shapes, key=lambda s: (s.usd_per_hour, s.usable.vcpus, s.usable.ram_mib, s.name,
                                          s.market.value)):
        if not shape_holds(task, s):
            continue
        fc, fr, got = s.usable.vcpus - task.vcpus, s.usable.ram_mib - task.ram_mib, values[task.id]
        for t in window:
            if t.vcpus <= fc and t.ram_mib <= fr and allowed_on(t, s):
                fc, fr, got = fc - t.vcpus, fr - t.ram_mib, got + values[t.id]
                if fc == 0:
                    break
        key = (got / s.usd_per_hour, -s.usd_per_hour)
        if best is None or key > best[0]:
            best = (key, s)
    return best[1]


@settings(max_examples=150, deadline=None)
@given(st.lists(raw_task, min_size=1, max_size=40), st.sampled_from([(16, 64), (8, 128), (0, 8), (4, 0)]),
       st.sampled_from(["dual", "bottleneck"]))
def test_the_lookahead_chooses_as_if_it_filled_every_shape(raw, window, valuation):
    # the chooser skips shapes by two bounds (the window's total, and the room left times the
    # window's best value per vCPU / MiB); the choice must be the one filling every shape gives
    tasks = [TaskSpec(f"t{i}", c, r, p, instance_type=pin) for i, (c, r, p, pin) in enumerate(raw)]
    tasks = [t for t in tasks if any(shape_holds(t, s) for s in SHAPES)]
    if not tasks:
        return
    head, spread = window
    values = (dual_values(tasks, lower_bound(tasks, SHAPES).prices) if valuation == "dual"
              else bottleneck_values(tasks, SHAPES))
    ordered = sorted(tasks, key=lambda t: (t.preempt.preemptible, t.instance_type is None, -values[t.id], t.id))
    choose = lookahead_chooser(SHAPES, values, head, spread)
    for i, t in enumerate(ordered):
        assert choose(t, i, ordered) == _choose_by_filling_every_shape(t, i, ordered, values, head, spread, SHAPES)


@settings(max_examples=100, deadline=None)
@given(st.lists(raw_task, min_size=1, max_size=40))
def test_bottleneck_values_are_the_cheapest_share_over_every_holding_shape(raw):
    # bottleneck_values looks only at the shapes no other beats on price, vCPUs and MiB together
    tasks = [t for t in (TaskSpec(f"t{i}", c, r, p, instance_type=pin) for i, (c, r, p, pin) in enumerate(raw))
             if any(shape_holds(t, s) for s in SHAPES)]
    got = bottleneck_values(tasks, SHAPES)
    for t in tasks:
        assert got[t.id] == min(
            s.usd_per_hour * max(t.vcpus / s.usable.vcpus, t.ram_mib / s.usable.ram_mib) for s in SHAPES
            if shape_holds(t, s))


# ------------------------------------------------------------ strategies run apart

def test_solve_is_the_same_whichever_way_its_strategies_run():
    # solve hands its strategies to run_each (plastic plan runs them side by side in forked
    # workers): each must stand alone, so running them last first changes nothing
    def last_first(attempt, items):
        return list(reversed([attempt(x) for x in reversed(items)]))

    for name, tasks in sorted(WORKLOADS.items()):
        for effort in (1, 2):
            one = solve(tasks, SHAPES, effort=effort)
            other = solve(tasks, SHAPES, effort=effort, run_each=last_first)
            assert (other.strategy, layout(other.nodes)) == (one.strategy, layout(one.nodes)), name


def test_solve_gives_each_strategy_once_to_run_each():
    seen: list[str] = []

    def recording(attempt, items):
        seen.extend(name for name, *_ in items)
        return [attempt(x) for x in items]

    solve(WORKLOADS["mixed"], SHAPES, run_each=recording)
    assert seen[0] == "seeds" and len(seen) == len(set(seen)) > 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(SHAPES), st.lists(st.integers(0, 30), max_size=3, unique=True)),
                max_size=12))
def test_sort_nodes_orders_one_shape_s_nodes_by_their_tasks(raw):
    # sort_nodes compares nodes of one shape by their first task only: the same order as by all their
    # tasks, since a task is on one node
    used: set[int] = set()
    nodes = []
    for s, ids in raw:
        mine = tuple(TaskSpec(f"t{i:02d}", 1, 256, PREEMPTIBLE) for i in ids if i not in used)
        used.update(ids)
        nodes.append(PackedNode(s, mine))
    by_all = sorted(nodes, key=lambda n: (n.shape.market is SPOT, -n.shape.usable.vcpus, -n.shape.usable.ram_mib,
                                          n.shape.name, tuple(t.id for t in n.tasks)))
    assert [(n.shape, n.tasks) for n in sort_nodes(nodes)] == [(n.shape, n.tasks) for n in by_all]
