"""plastic.core.elastic.spread: node sizes for tasks whose runtimes spread, worked out by hand on two
shapes (a 16-vCPU spot node at 0.01 USD per vCPU-hour, a 2-vCPU one at 0.012), and as properties."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.first_wave import sized_by_controller, starting_nodes
from plastic.core.elastic.model import ClusterObserved, CreateNodes, ElasticPolicy, NodeState, NodeView, WaitingTask
from plastic.core.elastic.spread import (
    SPREAD_POINTS,
    expected_longest_s,
    plan_spreads,
    spread_fill,
    spread_nodes,
    spread_summary,
)
from plastic.core.model import PREEMPTIBLE, Catalog, InstanceType, Market, Resources, TaskSpec, node_shapes
from plastic.core.planning.plan import PlannedNode
from tests.fakes.records import of, records

CATALOG = Catalog((InstanceType("big", 16, 32768, 0.64, 0.16, "<5%"),
                   InstanceType("small", 2, 4096, 0.08, 0.024, "<5%")))
SHAPES = node_shapes(CATALOG)
SPOT = tuple(s for s in SHAPES if s.market is Market.SPOT)
BIG, SMALL = (next(s for s in SPOT if s.name == name) for name in ("big", "small"))
BOOT_S = 60.0
HALVES = (100.0,) * 10 + (1000.0,) * 10  # half the tasks run 100 s, half 1000 s


def per_task_usd(shape, k, summary):
    return shape.usd_per_hour * (BOOT_S + expected_longest_s(summary, k)) / 3600.0 / k


# ------------------------------------------------------------ the summary and the longest of k


def test_a_summary_keeps_few_runtimes_as_they_are_and_many_as_twenty_quantiles():
    assert spread_summary([3.0, 1.0, 2.0]) == (1.0, 2.0, 3.0)
    assert spread_summary([]) == () and spread_summary([0.0, -1.0]) == ()  # no runtime to go by
    many = spread_summary(float(i) for i in range(1, 201))  # 1..200: the 2.5th, 7.5th, ... 97.5th percentiles
    assert len(many) == SPREAD_POINTS and many[0] == pytest.approx(1 + 199 * 0.025)
    assert many[-1] == pytest.approx(1 + 199 * 0.975)


def test_the_longest_of_k_is_the_mean_for_one_and_grows_towards_the_longest():
    assert expected_longest_s(HALVES, 1) == pytest.approx(550.0)
    # the longest of two is 100 s only when both are short (1 in 4)
    assert expected_longest_s(HALVES, 2) == pytest.approx(0.25 * 100 + 0.75 * 1000)
    assert expected_longest_s(HALVES, 16) == pytest.approx(1000.0 - 900.0 * 0.5 ** 16)
    assert expected_longest_s((), 4) == 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.5, 1e5), min_size=1, max_size=300), st.integers(1, 64))
def test_the_longest_of_k_lies_between_the_mean_and_the_longest_and_grows_with_k(runtimes, k):
    summary = spread_summary(runtimes)
    assert list(summary) == sorted(summary) and min(runtimes) - 1e-6 <= summary[0] <= summary[-1] <= max(runtimes) + 1e-6
    mean = sum(summary) / len(summary)
    longest = expected_longest_s(summary, k)
    assert mean - 1e-6 * mean <= longest <= summary[-1] * (1 + 1e-9)
    assert expected_longest_s(summary, k + 1) >= longest - 1e-9 * longest


# ------------------------------------------------------------ the fill


def test_like_runtimes_fill_the_cheapest_vcpus_as_packing_by_room_does():
    fill = spread_fill(SPOT, 1, 1024, (100.0,), BOOT_S)
    assert (fill.shape, fill.per_node) == (BIG, 16)
    assert fill.usd_per_task == pytest.approx(0.16 * 160 / 3600 / 16)
    assert spread_nodes(SPOT, 1, 1024, 40, (100.0,) * 20, BOOT_S) is None  # nothing for the spread to change


def test_spread_runtimes_pay_less_on_small_nodes_each_paid_until_its_longer_task_ends():
    fill = spread_fill(SPOT, 1, 1024, HALVES, BOOT_S)
    assert (fill.shape, fill.per_node) == (SMALL, 2)
    # by hand: a small node of two tasks 0.024 x (60 + 775) / 2, a big one of 16: 0.16 x (60 + ~1000) / 16
    assert fill.usd_per_task == pytest.approx(0.024 * 835 / 3600 / 2)
    assert per_task_usd(BIG, 16, HALVES) > fill.usd_per_task
    assert spread_nodes(SPOT, 1, 1024, 5, HALVES, BOOT_S) == [(SMALL, 2), (SMALL, 2), (SMALL, 1)]
    assert spread_fill(SPOT, 1, 1024, HALVES, BOOT_S, most=1).per_node == 1
    assert spread_fill(SPOT, 1, 1024, (), BOOT_S) is None


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(1.0, 5e4), min_size=1, max_size=60), st.integers(1, 100), st.integers(1, 3),
       st.floats(0.0, 300.0))
def test_spread_nodes_hold_every_task_once_within_each_shape_and_no_cheaper_fill_is_missed(runtimes, count, vcpus,
                                                                                          boot_s):
    summary = spread_summary(runtimes)
    nodes = spread_nodes(SPOT, vcpus, 1024, count, summary, boot_s)
    best = spread_fill(SPOT, vcpus, 1024, summary, boot_s)
    for shape in SPOT:  # the fill is the least expected cost per task of every shape and count
        for k in range(1, shape.usable.vcpus // vcpus + 1):
            assert best.usd_per_task <= shape.usd_per_hour * (boot_s + expected_longest_s(summary, k)) / 3600 / k + 1e-15
    if nodes is not None:
        assert sum(k for _, k in nodes) == count
        assert all(1 <= k <= shape.usable.vcpus // vcpus for shape, k in nodes)


# ------------------------------------------------------------ the controller


def waiting(n: int, step: str | None = "dump") -> tuple[WaitingTask, ...]:
    return tuple(WaitingTask(f"dump[{i}]", Resources(1, 1024), False, runtime_s=1000.0, step=step) for i in range(n))


CORE = NodeView("core-1", "core", "small", Market.ON_DEMAND, NodeState.READY, Resources(2, 4096), 0.08, 0.0,
                Resources(2, 4096), 2)  # the reliable node, busy


def bought(policy: ElasticPolicy, queued, spreads=()) -> list[tuple[str, int]]:
    out = ElasticController(SHAPES, policy).handle(ClusterObserved(queued, (CORE,), (), spreads), 10.0)
    by_spread = [r["detail"].endswith("2 a node, by their runtimes' spread") for r in records(out, "node_requested")]
    creates = sorted((c.instance_type, c.count) for c in of(out, CreateNodes))
    assert by_spread == [c == ("small", len(queued) // 2) for c in creates]  # the record says why
    return creates


def test_the_controller_sizes_a_spread_step_s_nodes_by_its_spread_and_others_by_room():
    ahead = ElasticPolicy(lead_s=BOOT_S, band_weight=0.0)
    assert bought(ahead, waiting(16), (("dump", HALVES),)) == [("small", 8)]
    assert bought(ahead, waiting(16), (("dump", (100.0,) * 20),)) == [("big", 1)]  # like runtimes: by room
    assert bought(ahead, waiting(16)) == [("big", 1)]  # no spread known
    assert bought(ahead, waiting(16, step=None), (("dump", HALVES),)) == [("big", 1)]  # not a task of that step
    # without looking ahead (no boot, no estimates) the controller does not size by spread
    assert bought(ElasticPolicy(band_weight=0.0), waiting(16), (("dump", HALVES),)) == [("big", 1)]


# ------------------------------------------------------------ the first wave


PLAN_TASKS = (*(TaskSpec(f"dump[{i}]", 1, 1024, PREEMPTIBLE, 100.0 if i % 2 else 1000.0) for i in range(16)),
              TaskSpec("index", 1, 1024, PREEMPTIBLE, 500.0),
              TaskSpec("merge", 1, 1024, PREEMPTIBLE, 5.0, parents=("dump[0]", "index")))


def test_the_plan_s_spreads_and_the_tasks_the_controller_sizes_itself():
    assert dict(plan_spreads(PLAN_TASKS)) == {"dump": HALVES[:8] + HALVES[10:18], "index": (500.0,),
                                              "merge": (5.0,)}
    later = sized_by_controller(PLAN_TASKS, SHAPES, ElasticPolicy(lead_s=BOOT_S, band_weight=0.0))
    assert later == frozenset(f"dump[{i}]" for i in range(16))
    assert sized_by_controller(PLAN_TASKS, SHAPES, ElasticPolicy(band_weight=0.0)) == frozenset()  # no lead


def test_an_elastic_cluster_starts_without_the_plan_s_spot_nodes_of_tasks_sized_later():
    nodes = (PlannedNode("core-1", "core", "small", Market.ON_DEMAND, 0.08, Resources(2, 4096), ("dump[0]",)),
             PlannedNode("burst-1", "burst", "big", Market.SPOT, 0.16, Resources(16, 32768),
                         tuple(f"dump[{i}]" for i in range(1, 16))),
             PlannedNode("burst-2", "burst", "small", Market.SPOT, 0.024, Resources(2, 4096), ("index",)))
    assert [n.id for n in starting_nodes(nodes, PLAN_TASKS)] == ["core-1", "burst-1", "burst-2"]
    later = frozenset(f"dump[{i}]" for i in range(16))
    # the on-demand node stays whatever it holds; the spot node of the dumps is the controller's to size
    assert [n.id for n in starting_nodes(nodes, PLAN_TASKS, later)] == ["core-1", "burst-2"]
    assert math.isclose(sum(n.usd_per_hour for n in starting_nodes(nodes, PLAN_TASKS, later)), 0.104)


def test_under_a_makespan_allowance_short_tasks_are_sized_by_the_controller_too():
    """With an allowance of 0.1 and a 60 s boot, a task of at most 0.1 x 60 / 0.9 = 6.7 s runs back to back
    with another within the slack (plastic.core.elastic.forecast.back_to_back): the merge (5 s) is the
    controller's to size; the index (500 s) is not."""
    policy = ElasticPolicy(lead_s=BOOT_S, band_weight=0.0, makespan_allowance=0.1)
    later = sized_by_controller(PLAN_TASKS, SHAPES, policy)
    assert later == frozenset(f"dump[{i}]" for i in range(16)) | {"merge"}
    assert "merge" not in sized_by_controller(PLAN_TASKS, SHAPES, replace(policy, makespan_allowance=0.0))


def test_an_on_demand_node_of_a_task_sized_later_waits_too_but_one_always_starts():
    short = (TaskSpec("a", 1, 1024, PREEMPTIBLE, 2.0), TaskSpec("b", 1, 1024, PREEMPTIBLE, 2.0))
    nodes = (PlannedNode("core-1", "core", "small", Market.ON_DEMAND, 0.08, Resources(2, 4096), ("a",)),
             PlannedNode("core-2", "core", "small", Market.ON_DEMAND, 0.08, Resources(2, 4096), ("b",)),
             PlannedNode("burst-1", "burst", "small", Market.SPOT, 0.024, Resources(2, 4096), ()))
    assert [n.id for n in starting_nodes(nodes, short, frozenset({"b"}))] == ["core-1"]
    assert [n.id for n in starting_nodes(nodes, short, frozenset({"a", "b"}))] == ["core-1"]  # the plan's first
