"""The elastic controller (plastic.core.elastic.controller): one scenario per rule, with explicit `now`."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.model import (
    ClusterObserved,
    CordonNode,
    CreateNodes,
    CreateRefused,
    ElasticPolicy,
    NodesCreated,
    NodeState,
    NodeView,
    TerminateNode,
    UncordonNode,
    WaitingTask,
)
from plastic.core.model import Market, Resources
from tests.fakes.catalogs import ELASTIC_CATALOG, ELASTIC_SHAPES
from tests.fakes.records import of, records

_ids = itertools.count()


def task(tid, vcpus=1, ram=1024, reliable=False, pin=None, waited=0.0):
    return WaitingTask(tid, Resources(vcpus, ram), reliable, pin, waited)


def node(nid, itype="c5.large", market=Market.ON_DEMAND, state=NodeState.READY, *, used=(0, 0), running=0,
         idle_since=0.0, created_at=0.0, ended_at=None, released=False):
    t = ELASTIC_CATALOG.by_name(itype)
    price = t.on_demand_usd_per_hour if market is Market.ON_DEMAND else t.spot_usd_per_hour
    return NodeView(nid, "core" if market is Market.ON_DEMAND else "burst", itype, market, state, t.capacity, price,
                    created_at, Resources(*used), running, None if running else idle_since, ended_at, released)


CORE = node("core-1", used=(2, 4096), running=2)  # the reliable node, busy


def scatter(n, **kw):
    return tuple(task(f"s[{i}]", **kw) for i in range(n))


def test_queued_preemptible_work_gets_spot_nodes_of_the_cheapest_weighted_shape():
    ctl = ElasticController(ELASTIC_SHAPES)
    out = ctl.handle(ClusterObserved(scatter(12), (CORE,)), 10.0)
    creates = of(out, CreateNodes)
    assert creates and all(c.market is Market.SPOT for c in creates)
    slots = sum(ELASTIC_CATALOG.by_name(c.instance_type).vcpus * c.count for c in creates)
    assert slots >= 12
    (rec,) = records(out, "node_requested")
    assert rec["reason"] == "queued_work" and rec["tasks"][:2] == ["s[0]", "s[10]"]


def test_band_weighting_prefers_the_low_band_when_the_price_difference_is_small():
    # one 2-vCPU/4-GiB task: m5.large spot is 7% cheaper than c5.large spot but in the 15-20% band
    ctl = ElasticController(ELASTIC_SHAPES)
    (create,) = of(ctl.handle(ClusterObserved((task("t", 2, 4096),), (CORE,)), 0.0), CreateNodes)
    assert (create.instance_type, create.market) == ("c5.large", Market.SPOT)
    by_price = ElasticController(ELASTIC_SHAPES, ElasticPolicy(band_weight=0.0))
    (create,) = of(by_price.handle(ClusterObserved((task("t", 2, 4096),), (CORE,)), 0.0), CreateNodes)
    assert (create.instance_type, create.market) == ("m5.large", Market.SPOT)


def test_reliable_work_gets_on_demand_nodes():
    ctl = ElasticController(ELASTIC_SHAPES)
    out = ctl.handle(ClusterObserved(scatter(3, reliable=True), (CORE,)), 0.0)
    assert {c.market for c in of(out, CreateNodes)} == {Market.ON_DEMAND}


def test_free_room_and_creations_in_flight_count_as_capacity():
    ctl = ElasticController(ELASTIC_SHAPES)
    roomy = node("core-2", "c5.xlarge", used=(0, 0), idle_since=5.0)
    assert not of(ctl.handle(ClusterObserved(scatter(4), (CORE, roomy)), 10.0), CreateNodes)
    first = of(ctl.handle(ClusterObserved(scatter(8), (CORE,)), 10.0), CreateNodes)
    assert first
    again = ctl.handle(ClusterObserved(scatter(8), (CORE,)), 12.0)  # the provider has not answered yet
    assert not of(again, CreateNodes)
    ids = tuple(f"n{i}" for i in range(first[0].count))
    ctl.handle(NodesCreated(first[0].request, ids), 12.5)
    booting = tuple(node(i, first[0].instance_type, Market.SPOT, NodeState.PENDING, created_at=10.0) for i in ids)
    out = ctl.handle(ClusterObserved(scatter(8), (CORE, *booting)), 15.0)
    assert not of(out, CreateNodes)
    ready = tuple(node(i, first[0].instance_type, Market.SPOT, created_at=10.0, used=(2, 2048), running=2)
                  for i in ids)
    out = ctl.handle(ClusterObserved((), (CORE, *ready)), 20.0)
    assert [r["boot_s"] for r in records(out, "node_ready")] == [10.0] * len(ids)


def test_a_nodes_boot_is_counted_to_when_it_was_ready_not_to_the_look_that_saw_it():
    ctl = ElasticController(ELASTIC_SHAPES)
    (ask,) = of(ctl.handle(ClusterObserved(scatter(2), (CORE,)), 10.0), CreateNodes)
    ctl.handle(NodesCreated(ask.request, ("n1",)), 10.5)
    up = replace(node("n1", ask.instance_type, Market.SPOT, created_at=10.0, used=(1, 1024), running=1),
                 ready_at=11.5)
    (ready,) = records(ctl.handle(ClusterObserved((), (CORE, up)), 15.0), "node_ready")
    assert (ready["boot_s"], ready["seen_after_s"]) == (1.5, 3.5)
    ctl = ElasticController(ELASTIC_SHAPES)
    (ask,) = of(ctl.handle(ClusterObserved(scatter(2), (CORE,)), 16.0), CreateNodes)
    ctl.handle(NodesCreated(ask.request, ("n2",)), 16.0)
    unknown = node("n2", ask.instance_type, Market.SPOT, created_at=16.0, used=(1, 1024), running=1)
    (ready,) = records(ctl.handle(ClusterObserved((), (CORE, unknown)), 20.0), "node_ready")
    assert (ready["boot_s"], ready["seen_after_s"]) == (4.0, 0.0)  # no ready time known: the look's
    # up, then a notice, before a look saw it up: it was ready all the same; one noticed while booting was not
    ctl = ElasticController(ELASTIC_SHAPES)
    (ask,) = of(ctl.handle(ClusterObserved(scatter(4), (CORE,)), 30.0), CreateNodes)
    ctl.handle(NodesCreated(ask.request, ("n3", "n4")), 30.0)
    noticed = [replace(node(i, ask.instance_type, Market.SPOT, NodeState.DRAINING, created_at=30.0), ready_at=at)
               for i, at in (("n3", 31.0), ("n4", None))]
    (ready,) = records(ctl.handle(ClusterObserved((), (CORE, *noticed)), 35.0), "node_ready")
    assert (ready["node_id"], ready["boot_s"]) == ("n3", 1.0)


def test_an_interrupted_spot_node_is_replaced_and_a_shape_interrupted_too_often_is_avoided():
    ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(max_interruptions=2, interruption_window_s=600))
    spot = [node(f"b{i}", "c5.large", Market.SPOT, used=(2, 2048), running=2) for i in range(2)]
    ctl.handle(ClusterObserved((), (CORE, *spot)), 0.0)
    gone = [node(n.node_id, "c5.large", Market.SPOT, NodeState.INTERRUPTED, ended_at=50.0) for n in spot[:1]]
    out = ctl.handle(ClusterObserved(scatter(2), (CORE, *gone, spot[1])), 50.0)
    assert [(r["node_id"], r["seen_after_s"]) for r in records(out, "node_interrupted")] == [("b0", 0.0)]
    (req,) = records(out, "node_requested")
    assert req["reason"] == "replace" and (req["instance_type"], req["market"]) == ("c5.large", "spot")
    ctl.requests.clear()  # the replacement came and went
    gone2 = node("b1", "c5.large", Market.SPOT, NodeState.INTERRUPTED, ended_at=58.0)
    out = ctl.handle(ClusterObserved(scatter(2), (CORE, *gone, gone2)), 60.0)
    assert records(out, "node_interrupted")[0]["seen_after_s"] == 2.0  # lost at 58 s, seen at 60 s
    (create,) = of(out, CreateNodes)
    assert create.instance_type != "c5.large" and create.market is Market.SPOT  # two interruptions: avoided
    ctl.requests.clear()
    out = ctl.handle(ClusterObserved(scatter(2), (CORE, *gone, gone2)), 700.0)  # out of the window again
    assert of(out, CreateNodes)[0].instance_type == "c5.large"


def test_a_spot_node_under_notice_counts_as_lost_once_whichever_look_buys_its_replacement():
    """The notice's window (the node draining, its tasks queued again) or after the node has gone: the
    nodes bought for its work are a replacement either way, and its interruption is counted once."""
    for look_in_window in (True, False):
        ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(max_interruptions=2, interruption_window_s=600))
        spot = node("b0", "c5.large", Market.SPOT, used=(2, 2048), running=2)
        ctl.handle(ClusterObserved((), (CORE, spot)), 0.0)
        draining = node("b0", "c5.large", Market.SPOT, NodeState.DRAINING, used=(2, 2048), running=2)
        gone = node("b0", "c5.large", Market.SPOT, NodeState.INTERRUPTED, ended_at=52.0)
        if look_in_window:
            out = ctl.handle(ClusterObserved(scatter(2), (CORE, draining)), 50.0)
        else:
            ctl.handle(ClusterObserved((), (CORE, draining)), 50.0)
            out = ctl.handle(ClusterObserved(scatter(2), (CORE, gone)), 53.0)
        (req,) = records(out, "node_requested")
        assert req["reason"] == "replace" and req["market"] == "spot", (look_in_window, req)
        ctl.requests.clear()
        out = ctl.handle(ClusterObserved((), (CORE, gone)), 60.0)
        assert len(records(out, "node_interrupted")) == (1 if look_in_window else 0)
        assert ctl.interruptions == [("c5.large", Market.SPOT, 50.0)] and ctl.unreplaced == 0


def test_a_node_drained_for_its_release_is_not_a_loss():
    ctl = ElasticController(ELASTIC_SHAPES)
    ctl.handle(ClusterObserved((), (CORE, node("b0", "c5.large", Market.SPOT))), 0.0)
    released = node("b0", "c5.large", Market.SPOT, NodeState.DRAINING, released=True)
    out = ctl.handle(ClusterObserved(scatter(2), (CORE, released)), 10.0)
    assert records(out, "node_requested")[0]["reason"] == "queued_work"
    assert ctl.unreplaced == 0 and not ctl.interruptions


def test_refused_spot_falls_back_to_the_next_shape_then_to_on_demand():
    ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(max_spot_refusals=99))  # every spot shape is tried
    seen = []
    for now in range(20):
        out = ctl.handle(ClusterObserved((task("t", 2, 4096),), (CORE,)), float(now))
        creates = of(out, CreateNodes)
        if not creates:
            break
        (c,) = creates
        seen.append((c.instance_type, c.market))
        if c.market is Market.ON_DEMAND:
            break
        out = ctl.handle(CreateRefused(c.request, c.instance_type, c.market, "InsufficientInstanceCapacity"), now)
        assert records(out, "create_refused")[0]["reason"] == "InsufficientInstanceCapacity"
    assert seen[0] == ("c5.large", Market.SPOT) and seen[-1][1] is Market.ON_DEMAND
    assert len({s for s in seen if s[1] is Market.SPOT}) == len([s for s in seen if s[1] is Market.SPOT]) >= 3


def test_spot_refused_for_two_types_sends_preemptible_work_on_demand_until_a_refusal_expires():
    ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(refused_for_s=300))
    seen = []
    for now in range(5):
        out = ctl.handle(ClusterObserved((task("t", 2, 4096),), (CORE,)), float(now))
        (c,) = of(out, CreateNodes)
        seen.append((c.instance_type, c.market))
        if c.market is Market.ON_DEMAND:
            break
        ctl.handle(CreateRefused(c.request, c.instance_type, c.market, "InsufficientInstanceCapacity"), float(now))
    assert [m for _, m in seen] == [Market.SPOT, Market.SPOT, Market.ON_DEMAND] and len(set(seen)) == 3
    assert records(out, "node_requested")[0]["reason"] == "spot_refused"
    # reliable work is not "spot refused"; once the refusals expire, spot is tried again
    for later, market in ((2.0, Market.ON_DEMAND), (400.0, Market.SPOT)):
        ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(refused_for_s=300))
        for i, now in enumerate((0.0, 1.0)):
            c = of(ctl.handle(ClusterObserved((task(f"t{i}", 2, 4096),), (CORE,)), now), CreateNodes)[0]
            ctl.handle(CreateRefused(c.request, c.instance_type, c.market, "InsufficientInstanceCapacity"), now)
        waiting = task("r", 1, 1024, reliable=True) if market is Market.ON_DEMAND else task("t9", 2, 4096)
        out = ctl.handle(ClusterObserved((waiting,), (CORE,)), later)
        assert of(out, CreateNodes)[0].market is market
        assert all(r["reason"] != "spot_refused" for r in records(out, "node_requested"))


def test_idle_nodes_are_cordoned_then_released_never_the_last_reliable_nor_a_busy_one():
    ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(idle_s=60))
    lone_core = node("core-1", idle_since=0.0)
    idle_spot = node("b1", "c5.large", Market.SPOT, idle_since=0.0)
    busy_spot = node("b2", "c5.large", Market.SPOT, used=(1, 1024), running=1)
    assert not of(ctl.handle(ClusterObserved((), (lone_core, idle_spot, busy_spot)), 59.0), CordonNode)
    out = ctl.handle(ClusterObserved((), (lone_core, idle_spot, busy_spot)), 61.0)
    assert [c.node_id for c in of(out, CordonNode)] == ["b1"]
    out = ctl.handle(ClusterObserved((), (lone_core, idle_spot, busy_spot)), 63.0)
    assert [t.node_id for t in of(out, TerminateNode)] == ["b1"] and records(out, "node_released")
    assert not of(out, CordonNode)  # the core node is the last reliable one


def test_a_node_that_queued_work_fits_is_not_idle_and_a_cordoned_node_that_got_a_task_waits():
    ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(idle_s=60))
    idle_spot = node("b1", "c5.large", Market.SPOT, idle_since=0.0)
    assert not of(ctl.handle(ClusterObserved(scatter(1), (CORE, idle_spot)), 100.0), CordonNode)
    ctl.handle(ClusterObserved((), (CORE, idle_spot)), 101.0)
    raced = node("b1", "c5.large", Market.SPOT, used=(1, 1024), running=1)
    assert not of(ctl.handle(ClusterObserved((), (CORE, raced)), 103.0), TerminateNode)


def test_a_cordoned_node_that_work_came_for_is_uncordoned_not_released_and_nothing_is_bought_for_it():
    """Toil issued a scatter just after the spot node went idle and was cordoned: the node takes it
    (released, the work would wait for new nodes); work it cannot hold does not keep it."""
    ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(idle_s=2))
    idle_spot = node("b1", "c5.large", Market.SPOT, idle_since=0.0)
    busy_core = node("core-1", used=(2, 4096), running=2)
    assert [c.node_id for c in of(ctl.handle(ClusterObserved((), (busy_core, idle_spot)), 3.0), CordonNode)] == ["b1"]
    out = ctl.handle(ClusterObserved(scatter(2), (busy_core, idle_spot)), 4.0)
    assert [u.node_id for u in of(out, UncordonNode)] == ["b1"] and records(out, "node_uncordoned")[0]["tasks"] == 2
    assert not of(out, TerminateNode) and not of(out, CreateNodes)  # the node holds the two tasks
    # cordoned again once idle, then work only a reliable node may run does not keep it
    assert of(ctl.handle(ClusterObserved((), (busy_core, idle_spot)), 7.0), CordonNode)
    out = ctl.handle(ClusterObserved((task("r", reliable=True),), (busy_core, idle_spot)), 8.0)
    assert [t.node_id for t in of(out, TerminateNode)] == ["b1"] and not of(out, UncordonNode)


def test_no_reliable_node_left_creates_one():
    ctl = ElasticController(ELASTIC_SHAPES)
    spot = node("b1", "c5.large", Market.SPOT, used=(1, 1024), running=1)
    out = ctl.handle(ClusterObserved((), (spot,)), 0.0)
    (c,) = of(out, CreateNodes)
    assert c.market is Market.ON_DEMAND and c.instance_type == "c5.large" and c.count == 1
    assert records(out, "node_requested")[0]["reason"] == "reliable_floor"


def test_budget_per_hour_is_never_exceeded_and_said_once():
    ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(budget_usd_per_hour=0.085 + 0.0349 * 2))
    out = ctl.handle(ClusterObserved(scatter(20), (CORE,)), 0.0)
    added = sum(next(s.usd_per_hour for s in ELASTIC_SHAPES if s.name == c.instance_type and s.market is c.market) * c.count
                for c in of(out, CreateNodes))
    assert 0.085 + added <= 0.085 + 0.0349 * 2 + 1e-9
    (stop,) = records(out, "growth_stopped")
    assert stop["limit"] == "budget_per_hour" and stop["waiting_tasks"] == 20
    assert not records(ctl.handle(ClusterObserved(scatter(20), (CORE,)), 1.0), "growth_stopped")


def test_whole_run_budget_stops_growth_when_the_projected_spend_reaches_it():
    pol = ElasticPolicy(budget_usd=0.05, budget_horizon_s=900)
    ctl = ElasticController(ELASTIC_SHAPES, pol)
    old = node("core-1", used=(2, 4096), running=2, created_at=-1200.0)  # 0.085 $/h for 20 min: 0.0283 $
    out = ctl.handle(ClusterObserved(scatter(8), (old,)), 0.0)
    assert not of(out, CreateNodes) and records(out, "growth_stopped")[0]["limit"] == "budget_usd"
    cheap = ElasticController(ELASTIC_SHAPES, ElasticPolicy(budget_usd=1.0))
    assert of(cheap.handle(ClusterObserved(scatter(8), (old,)), 0.0), CreateNodes)


def test_max_nodes():
    ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(max_nodes=2))
    out = ctl.handle(ClusterObserved(scatter(40), (CORE,)), 0.0)
    assert sum(c.count for c in of(out, CreateNodes)) == 1
    assert records(out, "growth_stopped")[0]["limit"] == "max_nodes"


def test_a_released_shape_is_not_created_again_for_the_same_work_within_the_hysteresis_window():
    ctl = ElasticController(ELASTIC_SHAPES, ElasticPolicy(idle_s=10, hysteresis_s=120))
    pinned = task("p", 2, 4096, pin="r5.large")  # fits neither node: it waits for its own shape
    idle = node("b1", "c5.large", Market.SPOT, idle_since=0.0)
    ctl.handle(ClusterObserved((), (CORE, idle)), 20.0)  # cordoned
    out = ctl.handle(ClusterObserved((), (CORE, idle)), 22.0)
    assert of(out, TerminateNode)
    gone = node("b1", "c5.large", Market.SPOT, NodeState.GONE, ended_at=23.0, released=True)
    work = (task("s", 2, 4096, waited=5.0), pinned)
    out = ctl.handle(ClusterObserved(work, (CORE, gone)), 24.0)
    made = {(c.instance_type, c.market) for c in of(out, CreateNodes)}
    assert ("c5.large", Market.SPOT) in made  # new work (not queued at the release): allowed
    assert not records(out, "node_interrupted")  # a release is not an interruption


@pytest.mark.parametrize("seed", range(5))
def test_same_observation_in_any_order_gives_the_same_decisions(seed):
    import random

    rng = random.Random(seed)
    queued = list(scatter(9)) + [task("r", 2, 2048, reliable=True), task("big", 4, 8192)]
    nodes = [CORE, node("b1", "c5.large", Market.SPOT, used=(1, 512), running=1),
             node("b2", "m5.large", Market.SPOT, idle_since=0.0)]
    outs = []
    for _ in range(2):
        rng.shuffle(queued)
        rng.shuffle(nodes)
        outs.append(ElasticController(ELASTIC_SHAPES).handle(ClusterObserved(tuple(queued), tuple(nodes)), 100.0))
    assert outs[0] == outs[1]


def test_a_wide_scatters_last_tasks_are_packed_again_when_that_is_cheaper():
    """170 tasks of 1 vCPU: ten c5.4xlarge full, and ten tasks left, which took an eleventh c5.4xlarge
    (the cheapest single shape for them) where five c5.large cost less (blast's wave in bench/elastic.py)."""
    from plastic.core.elastic.packing import (
        PLAN_TASKS_MAX,
        group_tasks,
        plan_groups,
        weighted_shapes,
    )

    queued = [task(f"s{i:03}", 1, 1000 + i) for i in range(170)]  # groups of one, as a trace's tasks are
    assert len(queued) > PLAN_TASKS_MAX
    shapes = weighted_shapes(ELASTIC_SHAPES, ElasticPolicy().band_weight)
    nodes = plan_groups(group_tasks(queued), shapes)
    assert sorted(t.id for n in nodes for t in n.tasks) == sorted(t.task_id for t in queued)
    assert all(n.shape.usable.holds(n.used) for n in nodes)
    big = next(s for s in shapes if s.name == "c5.4xlarge" and s.market is Market.SPOT)
    assert [n.shape for n in nodes if len(n.tasks) == 16] == [big] * 10
    rest = [n for n in nodes if len(n.tasks) < 16]
    assert sum(len(n.tasks) for n in rest) == 10
    assert sum(n.shape.usd_per_hour for n in rest) < big.usd_per_hour


def test_a_wide_scatter_is_packed_by_groups_with_every_rule_kept():
    from plastic.core.elastic.packing import (
        PLAN_TASKS_MAX,
        group_tasks,
        plan_groups,
        weighted_shapes,
    )

    queued = ([task(f"s{i}", 1, 1024) for i in range(200)] + [task(f"r{i}", 2, 4096, reliable=True) for i in range(7)]
              + [task(f"p{i}", 2, 8192, pin="r5.large") for i in range(3)] + [task(f"b{i}", 3, 3000) for i in range(5)])
    assert len(queued) > PLAN_TASKS_MAX
    nodes = plan_groups(group_tasks(queued), weighted_shapes(ELASTIC_SHAPES, ElasticPolicy().band_weight))
    placed = [t.id for n in nodes for t in n.tasks]
    assert sorted(placed) == sorted(t.task_id for t in queued)  # each task once
    for n in nodes:
        assert n.shape.usable.holds(n.used), n
        for t in n.tasks:
            if t.id.startswith("r"):
                assert n.shape.market is Market.ON_DEMAND
            if t.id.startswith("p"):
                assert n.shape.name == "r5.large"

    def scatter_shapes(packed):
        return {n.shape.name for n in packed if any(t.id.startswith("s") for t in n.tasks)}

    # the lowest (weighted) price per task: c5.4xlarge spot is 17% cheaper per vCPU than c5.large, a large
    # difference: it wins at the default weight (the scatter's full nodes; its last 8 tasks go on smaller
    # shapes, cheaper than a c5.4xlarge for 8); weighing risk twice as much, the <5% band wins
    assert {n.shape.name for n in nodes if len(n.tasks) == 16} == {"c5.4xlarge"}
    assert "c5.4xlarge" in scatter_shapes(nodes)
    assert scatter_shapes(plan_groups(group_tasks(queued), weighted_shapes(ELASTIC_SHAPES, 1.0))) == {"c5.large"}
    ctl = ElasticController(ELASTIC_SHAPES)
    out = ctl.handle(ClusterObserved(tuple(queued), (CORE,)), 0.0)
    assert sum(c.count for c in of(out, CreateNodes)) == len(nodes)
