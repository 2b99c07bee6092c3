"""plastic.core.planning.packing: placement rules, the seeds' shape choice and error messages."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
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
from plastic.core.planning.choosers import seeds_chooser, seeds_order
from plastic.core.planning.lower_bound import Prices, lower_bound
from plastic.core.planning.packing import (
    OpenNodes,
    PackedNode,
    ShapeMenu,
    allowed_on,
    cheapest_holding,
    pack,
    shape_holds,
    unplaceable,
)
from tests.fakes.catalogs import CATALOG, SHAPES, TYPE_NAMES, shape

GIB = 1024
OD, SPOT = Market.ON_DEMAND, Market.SPOT


def brute_cheapest(task, shapes):
    """The cheapest shape allowed for `task` with room for it, by plain enumeration."""
    ok = [s for s in shapes
          if s.usable.vcpus >= task.vcpus and s.usable.ram_mib >= task.ram_mib
          and (task.preempt.preemptible or s.market is OD)
          and (task.instance_type is None or s.name == task.instance_type)]
    return min(s.usd_per_hour for s in ok) if ok else None


def seeds_pack(tasks, shapes=SHAPES):
    prices = lower_bound(tasks, shapes).prices
    return pack(seeds_order(tasks, shapes), shapes, prices, seeds_chooser(shapes))


# ------------------------------------------------------------ allowed_on / shape_holds

def test_allowed_on_market_and_pin():
    rel = TaskSpec("r", 1, 256, RELIABLE)
    pre = TaskSpec("p", 1, 256, PREEMPTIBLE)
    esc = TaskSpec("e", 1, 256, Preempt(2))
    pin = TaskSpec("x", 1, 256, PREEMPTIBLE, instance_type="m5.xlarge")
    assert allowed_on(rel, shape("c5.large", OD)) and not allowed_on(rel, shape("c5.large", SPOT))
    assert allowed_on(pre, shape("c5.large", SPOT)) and allowed_on(pre, shape("c5.large", OD))
    assert allowed_on(esc, shape("c5.large", SPOT))
    assert allowed_on(pin, shape("m5.xlarge", SPOT)) and not allowed_on(pin, shape("m5.large", SPOT))


def test_shape_holds_checks_both_dimensions():
    s = shape("c5.xlarge", OD)  # 4 vCPU, 8 GiB
    assert shape_holds(TaskSpec("a", 4, 8 * GIB), s)
    assert not shape_holds(TaskSpec("b", 5, 1), s)
    assert not shape_holds(TaskSpec("c", 1, 8 * GIB + 1), s)


# ------------------------------------------------------------ cheapest_holding

@pytest.mark.parametrize("task, expected", [
    (TaskSpec("a", 1, 1024, RELIABLE), ("c5.large", OD)),
    (TaskSpec("a", 1, 1024, PREEMPTIBLE), ("m5.large", SPOT)),          # 0.0326
    (TaskSpec("a", 2, 5 * GIB, PREEMPTIBLE), ("m5.large", SPOT)),
    (TaskSpec("a", 2, 9 * GIB, PREEMPTIBLE), ("r5.large", SPOT)),       # 0.0504 < m5.xlarge 0.0653
    (TaskSpec("a", 3, 1024, RELIABLE), ("c5.xlarge", OD)),
    (TaskSpec("a", 5, 40 * GIB, RELIABLE), ("r5.2xlarge", OD)),        # 0.504 < m5.4xlarge 0.768
    (TaskSpec("a", 16, 100 * GIB, PREEMPTIBLE), ("r5.4xlarge", SPOT)),
    (TaskSpec("a", 1, 256, PREEMPTIBLE, instance_type="r5.2xlarge"), ("r5.2xlarge", SPOT)),
    (TaskSpec("a", 1, 256, RELIABLE, instance_type="r5.2xlarge"), ("r5.2xlarge", OD)),
])
def test_cheapest_holding_known_answers(task, expected):
    s = cheapest_holding(task, SHAPES)
    assert (s.name, s.market) == expected


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 16), st.integers(1, 128 * GIB),
       st.sampled_from([RELIABLE, PREEMPTIBLE, Preempt(1), Preempt(3)]),
       st.one_of(st.none(), st.sampled_from(TYPE_NAMES)))
def test_cheapest_holding_matches_enumeration(c, r, p, pin):
    task = TaskSpec("t", c, r, p, instance_type=pin)
    expected = brute_cheapest(task, SHAPES)
    if expected is None:
        with pytest.raises(UnplaceableTaskError):
            cheapest_holding(task, SHAPES)
    else:
        assert cheapest_holding(task, SHAPES).usd_per_hour == expected


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 20), st.integers(1, 140 * GIB),
                          st.sampled_from([RELIABLE, PREEMPTIBLE, Preempt(2)]),
                          st.one_of(st.none(), st.none(), st.sampled_from(TYPE_NAMES))), min_size=1, max_size=30))
def test_one_menu_answers_every_task_as_enumeration_does(raw):
    # the menu keeps one answer per size class (tasks between two shapes' sizes hold the same shapes):
    # asked about many tasks in turn, each answer is still exactly the shapes that hold that task
    menu = ShapeMenu(SHAPES)
    for i, (c, r, p, pin) in enumerate(raw):
        t = TaskSpec(f"t{i}", c, r, p, instance_type=pin)
        assert menu.holding(t) == tuple(s for s in menu.shapes if shape_holds(t, s))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(SHAPES))), st.lists(st.integers(1, 16 * GIB), max_size=6)),
                min_size=1, max_size=25),
       st.lists(st.tuples(st.integers(1, 8), st.integers(1, 40 * GIB), st.sampled_from([RELIABLE, PREEMPTIBLE]),
                          st.one_of(st.none(), st.none(), st.sampled_from(TYPE_NAMES))), min_size=1, max_size=20),
       st.floats(0.0, 1.0), st.floats(0.0, 1e-4))
# a node with fewer free vCPUs but much free RAM is found first; one with a vCPU more and little RAM to spare
# leaves less slack, and is found only if the search goes on past the first node found
@example(opened=[(0, [1024]), (8, [])], asks=[(1, 3072, RELIABLE, None)], pc=0.3, pr=1e-4)
def test_the_open_node_index_finds_the_tightest_node_as_enumeration_does(opened, asks, pc, pr):
    # nodes opened with a few tasks each, then tasks asked about and placed one by one: each answer is the
    # allowed node with room leaving the least priced slack (ties: on-demand, then fewer free vCPUs, less
    # free RAM, the earlier node), or None when there is none
    prices = Prices(pc, pr, pc, pr, 0.0)
    index = OpenNodes(max(s.usable.vcpus for s in SHAPES))
    for k, (shape_i, rams) in enumerate(opened):
        sh = SHAPES[shape_i]
        fill, room = [], sh.usable
        for j, ram in enumerate(rams):
            if j < room.vcpus and sum(t.ram_mib for t in fill) + ram <= room.ram_mib:
                fill.append(TaskSpec(f"f{k}.{j}", 1, ram, RELIABLE))
        index.open(sh, fill)
    for i, (c, r, p, pin) in enumerate(asks):
        t = TaskSpec(f"t{i}", c, r, p, instance_type=pin)

        def slack(n):
            return pc * (n.free_vcpus - c) + pr * (n.free_ram_mib - r)

        ok = [n for n in index.nodes if n.fits(t) and allowed_on(t, n.shape)]
        want = min(ok, key=lambda n: (slack(n), not n.shape.reliable, n.free_vcpus, n.free_ram_mib, n.seq),
                   default=None)
        got = index.tightest(t, prices)
        if want is None or pin is not None:  # (a pinned task's nodes are scanned in order: the slack is what counts)
            assert (got is None) == (want is None)
            if got is not None:
                assert got in ok and slack(got) == slack(want)
        else:
            assert got is want, (t, got, want)
        if got is not None:
            index.put(got, t)


# ------------------------------------------------------------ errors

def test_unplaceable_messages():
    too_big_cpu = TaskSpec("cpu", 17, 1024, PREEMPTIBLE)
    e = unplaceable(too_big_cpu, SHAPES)
    assert e.task_id == "cpu" and e.field == "vcpus" and "vcpus" in str(e) and "17" in str(e)
    too_big_ram = TaskSpec("ram", 4, 129 * GIB, RELIABLE)
    e = unplaceable(too_big_ram, SHAPES)
    assert e.field == "vram" and "vram" in str(e) and "on-demand" in str(e)
    pin_small = TaskSpec("pin", 4, 1024, PREEMPTIBLE, instance_type="c5.large")
    e = unplaceable(pin_small, SHAPES)
    assert e.field == "instanceType" and "instanceType" in str(e) and "c5.large" in str(e)
    unknown = TaskSpec("u", 1, 1, PREEMPTIBLE, instance_type="z9.huge")
    e = unplaceable(unknown, SHAPES)
    assert e.field == "instanceType" and "z9.huge" in str(e)
    assert e.binding_constraint == "capacity"


def test_no_type_has_both_dimensions():
    # a 2-type catalog, one type wide in CPU (16 / 32 GiB), the other in RAM (8 / 64 GiB)
    shapes = tuple(s for s in SHAPES if s.name in ("c5.4xlarge", "r5.2xlarge"))
    t = TaskSpec("t", 12, 40 * GIB, PREEMPTIBLE)
    e = unplaceable(t, shapes)
    assert e.field == "vram" and "both" in str(e)
    with pytest.raises(UnplaceableTaskError):
        cheapest_holding(t, shapes)


# ------------------------------------------------------------ pack

def assert_valid_packing(nodes, tasks):
    placed = [t for n in nodes for t in n.tasks]
    assert sorted(t.id for t in placed) == sorted(t.id for t in tasks)
    for n in nodes:
        assert n.tasks, "pack() returns no empty node"
        assert sum(t.vcpus for t in n.tasks) <= n.shape.usable.vcpus
        assert sum(t.ram_mib for t in n.tasks) <= n.shape.usable.ram_mib
        for t in n.tasks:
            assert t.preempt.preemptible or n.shape.market is OD
            assert t.instance_type is None or t.instance_type == n.shape.name


def test_pack_single_task_opens_the_cheapest_holding_node():
    for t, expected in [(TaskSpec("a", 3, 7 * GIB, RELIABLE), ("c5.xlarge", OD)),
                        (TaskSpec("a", 3, 7 * GIB, PREEMPTIBLE), ("m5.xlarge", SPOT))]:
        nodes = seeds_pack([t])
        assert [(n.shape.name, n.shape.market) for n in nodes] == [expected]


def test_pack_fills_open_nodes_before_opening_new_ones():
    # eight 1-vCPU/1-GiB preemptible tasks: the first opens m5.large spot (2 vCPU), the
    # second fills it, ... -> four m5.large spot nodes holding two tasks each
    tasks = [TaskSpec(f"t{i}", 1, 1024, PREEMPTIBLE) for i in range(8)]
    nodes = seeds_pack(tasks)
    assert_valid_packing(nodes, tasks)
    assert len(nodes) == 4
    assert all((n.shape.name, n.shape.market) == ("m5.large", SPOT) and len(n.tasks) == 2 for n in nodes)


def test_pack_keeps_reliable_tasks_off_spot_nodes_with_room():
    # a spot node with plenty of room is open when the reliable task arrives
    big = TaskSpec("big", 1, 100 * GIB, PREEMPTIBLE)
    rel = TaskSpec("rel", 1, 256, RELIABLE)
    prices = lower_bound([big, rel], SHAPES).prices
    nodes = pack([big, rel], SHAPES, prices, seeds_chooser(SHAPES))
    assert_valid_packing(nodes, [big, rel])
    by_id = {t.id: n for n in nodes for t in n.tasks}
    assert by_id["big"].shape.market is SPOT and by_id["rel"].shape.market is OD
    assert len(nodes) == 2


def test_pack_pinned_task_avoids_other_types_with_room():
    big = TaskSpec("big", 1, 100 * GIB, PREEMPTIBLE)           # r5.4xlarge spot, lots of room left
    pin = TaskSpec("pin", 1, 256, PREEMPTIBLE, instance_type="m5.xlarge")
    free = TaskSpec("free", 1, 256, PREEMPTIBLE)
    prices = lower_bound([big, pin, free], SHAPES).prices
    nodes = pack([big, pin, free], SHAPES, prices, seeds_chooser(SHAPES))
    assert_valid_packing(nodes, [big, pin, free])
    by_id = {t.id: n for n in nodes for t in n.tasks}
    assert by_id["pin"].shape.name == "m5.xlarge"
    assert len(nodes) == 2  # `free` joined one of the open nodes


def test_pack_reliable_pinned_task_needs_on_demand_node_of_its_type():
    pre = TaskSpec("pre", 1, 256, PREEMPTIBLE, instance_type="m5.xlarge")
    rel = TaskSpec("rel", 1, 256, RELIABLE, instance_type="m5.xlarge")
    prices = lower_bound([pre, rel], SHAPES).prices
    nodes = pack([pre, rel], SHAPES, prices, seeds_chooser(SHAPES))
    assert_valid_packing(nodes, [pre, rel])
    assert sorted((n.shape.name, n.shape.market.value) for n in nodes) == \
        [("m5.xlarge", "on-demand"), ("m5.xlarge", "spot")]


def test_pack_with_initial_nodes_uses_their_room():
    first = PackedNode(shape("m5.4xlarge", OD), (TaskSpec("old", 2, 2048, RELIABLE),))
    t = TaskSpec("new", 4, 4096, PREEMPTIBLE)
    prices = lower_bound([t], SHAPES).prices
    nodes = pack([t], SHAPES, prices, seeds_chooser(SHAPES), initial=[first])
    assert len(nodes) == 1 and {x.id for x in nodes[0].tasks} == {"old", "new"}


def test_pack_with_reserve_respects_usable_capacity():
    shapes = node_shapes(CATALOG, Reserve(1, 1024))
    tasks = [TaskSpec(f"t{i}", 1, 3 * GIB, PREEMPTIBLE) for i in range(5)]
    nodes = pack(seeds_order(tasks, shapes), shapes, lower_bound(tasks, shapes).prices, seeds_chooser(shapes))
    assert_valid_packing(nodes, tasks)
    for n in nodes:
        assert n.shape.usable.vcpus == n.shape.instance_type.vcpus - 1
        assert n.shape.usable.ram_mib == n.shape.instance_type.ram_mib - 1024


task_st = st.builds(
    lambda c, r, p, pin: (c, r, p, pin),
    st.integers(1, 16), st.integers(256, 65536),
    st.sampled_from([RELIABLE, PREEMPTIBLE, Preempt(1), Preempt(3)]),
    st.one_of(st.none(), st.none(), st.none(), st.sampled_from(("m5.4xlarge", "r5.4xlarge", "c5.4xlarge",
                                                                  "r5.2xlarge", "m5.2xlarge"))),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(task_st, max_size=40))
def test_pack_seeds_always_valid(raw):
    tasks = [TaskSpec(f"t{i}", c, r, p, instance_type=pin) for i, (c, r, p, pin) in enumerate(raw)]
    tasks = [t for t in tasks if brute_cheapest(t, SHAPES) is not None]
    nodes = seeds_pack(tasks)
    assert_valid_packing(nodes, tasks)
    # every node was opened for some task with the cheapest shape holding that task: so the
    # packing never costs more than one cheapest node per task
    assert sum(n.shape.usd_per_hour for n in nodes) <= sum(brute_cheapest(t, SHAPES) for t in tasks) + 1e-9
