"""The benchmark's baselines (bench/baselines.py) are valid packings and follow their stated rules."""

from __future__ import annotations

import random
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.baselines import (  # noqa: E402
    all_on_demand,
    check_packing,
    ensure_on_demand_node,
    naive_ffd,
    toil_binpacked_fit,
    toil_shape_order,
)
from plastic.core.model import (  # noqa: E402
    PREEMPTIBLE,
    RELIABLE,
    Catalog,
    InstanceType,
    Market,
    TaskSpec,
    node_shapes,
)
from plastic.core.planning.packing import PackedNode  # noqa: E402

GIB = 1024

CATALOG = Catalog((
    InstanceType("c.large", 2, 4 * GIB, 0.085, 0.035),
    InstanceType("c.xlarge", 4, 8 * GIB, 0.17, 0.075),
    InstanceType("m.large", 2, 8 * GIB, 0.096, 0.0326),
    InstanceType("m.xlarge", 4, 16 * GIB, 0.192, 0.065),
    InstanceType("r.xlarge", 4, 32 * GIB, 0.252, 0.078),
    InstanceType("r.2xlarge", 8, 64 * GIB, 0.504, 0.197),
))
SHAPES = node_shapes(CATALOG)


def random_tasks(n: int, seed: int, *, reliable_share: float) -> list[TaskSpec]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        c = rng.randint(1, 8)
        out.append(TaskSpec(f"t{i:03d}", c, rng.randint(c * GIB // 2, min(c * 8 * GIB, 64 * GIB)),
                            preempt=RELIABLE if rng.random() < reliable_share else PREEMPTIBLE))
    return out


INPUTS = [
    pytest.param(random_tasks(n, seed, reliable_share=share), id=f"n{n}-s{seed}-r{share}")
    for n, seed, share in [(1, 1, 0.0), (1, 2, 1.0), (7, 3, 0.5), (40, 4, 0.0), (40, 5, 1.0), (120, 6, 0.3)]
]


def cost(nodes):
    return sum(n.shape.usd_per_hour for n in nodes)


@pytest.mark.parametrize("tasks", INPUTS)
@pytest.mark.parametrize("baseline", [naive_ffd, toil_binpacked_fit, all_on_demand])
def test_valid_packing(baseline, tasks):
    nodes = baseline(tasks, SHAPES)
    view = [replace(t, preempt=RELIABLE) for t in tasks] if baseline is all_on_demand else tasks
    check_packing(view, nodes)  # capacity, each task once, reliable never on spot
    for n in nodes:  # and directly, without trusting check_packing
        assert sum(t.vcpus for t in n.tasks) <= n.shape.usable.vcpus
        assert sum(t.ram_mib for t in n.tasks) <= n.shape.usable.ram_mib
        assert all(t.preempt.preemptible for t in n.tasks) or n.shape.market is Market.ON_DEMAND
    placed = [t.id for n in nodes for t in n.tasks]
    assert sorted(placed) == sorted(t.id for t in tasks)
    assert any(n.shape.reliable for n in nodes)
    if baseline is all_on_demand:
        assert all(n.shape.market is Market.ON_DEMAND for n in nodes)


def test_check_packing_catches_errors():
    t = [TaskSpec("a", 2, 1024), TaskSpec("b", 1, 1024, preempt=PREEMPTIBLE)]
    od = next(s for s in SHAPES if s.name == "c.large" and s.reliable)
    spot = next(s for s in SHAPES if s.name == "c.large" and not s.reliable)
    check_packing(t, [PackedNode(od, (t[0],)), PackedNode(spot, (t[1],))])
    with pytest.raises(AssertionError, match="over capacity"):
        check_packing(t, [PackedNode(od, tuple(t))])
    with pytest.raises(AssertionError, match="reliable"):
        check_packing(t, [PackedNode(spot, (t[0],)), PackedNode(od, (t[1],))])
    with pytest.raises(AssertionError, match="exactly once"):
        check_packing(t, [PackedNode(od, (t[0],))])
    with pytest.raises(AssertionError, match="exactly once"):
        check_packing(t, [PackedNode(od, (t[0],)), PackedNode(spot, (t[1],)), PackedNode(spot, (t[1],))])


def test_on_demand_node_added_only_when_missing():
    tasks = [TaskSpec("a", 1, 512, preempt=PREEMPTIBLE)]
    for fn in (naive_ffd, toil_binpacked_fit):
        bare = fn(tasks, SHAPES, ensure_on_demand=False)
        assert all(not n.shape.reliable for n in bare)
        nodes, added = ensure_on_demand_node(bare, SHAPES)
        assert added and nodes[-1].tasks == () and nodes[-1].shape.name == "c.large" and nodes[-1].shape.reliable
        assert fn(tasks, SHAPES) == nodes
    reliable = [TaskSpec("a", 1, 512)]
    nodes, added = ensure_on_demand_node(naive_ffd(reliable, SHAPES), SHAPES)
    assert not added and len(nodes) == 1


# ---------------------------------------------------------------- exact rules, against slow references

def reference_naive(tasks, shapes):
    max_c = max(s.usable.vcpus for s in shapes)
    max_r = max(s.usable.ram_mib for s in shapes)
    order = sorted(tasks, key=lambda t: -(t.vcpus / max_c + t.ram_mib / max_r))
    nodes = []  # [shape, free_c, free_r, tasks]
    for t in order:
        for n in nodes:
            if n[1] >= t.vcpus and n[2] >= t.ram_mib and (t.preempt.preemptible or n[0].reliable):
                n[1] -= t.vcpus
                n[2] -= t.ram_mib
                n[3].append(t)
                break
        else:
            s = min((s for s in shapes if s.usable.holds(t.demand) and (t.preempt.preemptible or s.reliable)),
                    key=lambda s: (s.usd_per_hour, s.usable.vcpus, s.usable.ram_mib, s.name))
            nodes.append([s, s.usable.vcpus - t.vcpus, s.usable.ram_mib - t.ram_mib, [t]])
    return [PackedNode(n[0], tuple(n[3])) for n in nodes]


def reference_toil(tasks, shapes):
    shapes = sorted(shapes, key=lambda s: (s.market is Market.ON_DEMAND, s.usable.ram_mib, s.usable.vcpus,
                                           s.usd_per_hour, s.name))
    order = sorted(tasks, key=lambda t: (t.preempt.preemptible, -t.ram_mib, -t.vcpus))
    nodes = []
    for t in order:
        s = next(s for s in shapes if s.usable.holds(t.demand) and (t.preempt.preemptible or s.reliable))
        for n in nodes:
            if n[0] is s and n[1] >= t.vcpus and n[2] >= t.ram_mib:
                n[1] -= t.vcpus
                n[2] -= t.ram_mib
                n[3].append(t)
                break
        else:
            nodes.append([s, s.usable.vcpus - t.vcpus, s.usable.ram_mib - t.ram_mib, [t]])
    return [PackedNode(n[0], tuple(n[3])) for n in nodes]


@pytest.mark.parametrize("seed", range(4))
def test_fast_first_fit_equals_linear_scan(seed):
    # enough tasks to grow the first-fit index past its initial size
    tasks = random_tasks(300, 100 + seed, reliable_share=0.4)
    assert naive_ffd(tasks, SHAPES, ensure_on_demand=False) == reference_naive(tasks, SHAPES)
    assert toil_binpacked_fit(tasks, SHAPES, ensure_on_demand=False) == reference_toil(tasks, SHAPES)


def test_toil_order_and_choice():
    order = toil_shape_order(SHAPES)
    assert [s.market for s in order[:6]] == [Market.SPOT] * 6
    spot = order[:6]
    assert [(s.usable.ram_mib, s.usable.vcpus) for s in spot] == sorted((s.usable.ram_mib, s.usable.vcpus)
                                                                       for s in spot)
    # 2 vCPUs / 6 GiB: smallest-memory spot shape holding it is m.large (8 GiB, 2 vCPUs),
    # ahead of c.xlarge (8 GiB, 4 vCPUs) on cores; price is not consulted.
    nodes = toil_binpacked_fit([TaskSpec("p", 2, 6 * GIB, preempt=PREEMPTIBLE)], SHAPES, ensure_on_demand=False)
    assert [(n.shape.name, n.shape.market) for n in nodes] == [("m.large", Market.SPOT)]
    # a reliable job only on on-demand shapes
    nodes = toil_binpacked_fit([TaskSpec("r", 2, 6 * GIB)], SHAPES)
    assert [(n.shape.name, n.shape.market) for n in nodes] == [("m.large", Market.ON_DEMAND)]
    # a small job whose first shape differs does not use the big node's leftover room
    big = TaskSpec("big", 3, 20 * GIB, preempt=PREEMPTIBLE)   # -> r.xlarge spot, 1 vCPU + 12 GiB left
    small = TaskSpec("small", 1, 1 * GIB, preempt=PREEMPTIBLE)  # -> c.large spot
    nodes = toil_binpacked_fit([small, big], SHAPES, ensure_on_demand=False)
    assert [n.shape.name for n in nodes] == ["r.xlarge", "c.large"]
    # ... whereas naive FFD first-fits it into the open node
    nodes = naive_ffd([small, big], SHAPES, ensure_on_demand=False)
    assert len(nodes) == 1 and {t.id for t in nodes[0].tasks} == {"big", "small"}


def test_naive_picks_cheapest_market_per_job():
    t = TaskSpec("p", 2, 6 * GIB, preempt=PREEMPTIBLE)
    nodes = naive_ffd([t], SHAPES, ensure_on_demand=False)
    assert [(n.shape.name, n.shape.market) for n in nodes] == [("m.large", Market.SPOT)]  # $0.0326
    nodes = naive_ffd([replace(t, preempt=RELIABLE)], SHAPES)
    assert [(n.shape.name, n.shape.market) for n in nodes] == [("m.large", Market.ON_DEMAND)]  # $0.096
    # a reliable job never first-fits into an open spot node
    p = TaskSpec("p", 2, 2 * GIB, preempt=PREEMPTIBLE)
    r = TaskSpec("r", 1, 1 * GIB)
    nodes = naive_ffd([p, r], [s for s in SHAPES if s.name == "c.xlarge"])
    check_packing([p, r], nodes)
    assert len(nodes) == 2


def test_all_on_demand_costs_at_least_plastic():
    from plastic.core.planning.planner import solve
    tasks = random_tasks(60, 9, reliable_share=0.0)
    assert cost(all_on_demand(tasks, SHAPES)) >= solve(tasks, SHAPES).usd_per_hour


def test_empty_input():
    for fn in (naive_ffd, toil_binpacked_fit):
        nodes = fn([], SHAPES)
        assert len(nodes) == 1 and nodes[0].shape.reliable and nodes[0].tasks == ()
