"""Which planned nodes a local cluster emulates (plastic.core.planning.local_shape)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plastic.core.model import Market, Resources
from plastic.core.planning.local_shape import local_shape
from plastic.core.planning.plan import PlannedNode


def node(i: int, cluster: str, vcpus: int = 2, ram: int = 4096, market: Market = Market.SPOT) -> PlannedNode:
    return PlannedNode(f"n{i}", cluster, "m5.large", market, 0.03, Resources(vcpus, ram), ())


def test_small_plan_is_kept_whole():
    nodes = [node(0, "core", market=Market.ON_DEMAND), node(1, "burst")]
    shape = local_shape(nodes, machine_vcpus=8, machine_ram_mib=32768, max_agents=8)
    assert shape.nodes == tuple(nodes)
    assert not shape.scaled
    assert shape.notes == ()


def test_plan_larger_than_machine_says_so_but_keeps_shapes():
    nodes = [node(0, "core", 16, 65536, Market.ON_DEMAND)]
    shape = local_shape(nodes, machine_vcpus=2, machine_ram_mib=8192, max_agents=8)
    assert shape.nodes == tuple(nodes)
    assert len(shape.notes) == 1 and "16 vCPUs" in shape.notes[0] and "2 cores" in shape.notes[0]


def test_many_nodes_are_cut_in_proportion_keeping_one_per_cluster():
    nodes = ([node(0, "core", market=Market.ON_DEMAND)] + [node(i, "burst-small") for i in range(1, 31)]
             + [node(i, "burst-large", 16) for i in range(31, 41)])
    shape = local_shape(nodes, machine_vcpus=2, machine_ram_mib=8192, max_agents=6)
    kept = [n.cluster for n in shape.nodes]
    assert len(kept) == 6
    assert kept.count("core") == 1
    assert kept.count("burst-small") == 3 and kept.count("burst-large") == 2  # 3 extra, 29:9 -> 2.29:0.71
    assert shape.scaled and "41 nodes" in shape.notes[0]


def test_more_clusters_than_agents_keeps_every_cluster():
    nodes = [node(i, f"c{i}") for i in range(5)]
    shape = local_shape(nodes, machine_vcpus=64, machine_ram_mib=2**20, max_agents=2)
    assert {n.cluster for n in shape.nodes} == {f"c{i}" for i in range(5)}


def test_max_agents_must_be_positive():
    with pytest.raises(ValueError):
        local_shape([node(0, "a")], machine_vcpus=1, machine_ram_mib=1, max_agents=0)


@given(st.lists(st.tuples(st.sampled_from(["core", "a", "b", "c"]), st.integers(1, 16)), min_size=1, max_size=60),
       st.integers(1, 12))
def test_properties(specs, max_agents):
    nodes = [node(i, c, v) for i, (c, v) in enumerate(specs)]
    shape = local_shape(nodes, machine_vcpus=4, machine_ram_mib=16384, max_agents=max_agents)
    clusters = {n.cluster for n in nodes}
    assert {n.cluster for n in shape.nodes} == clusters  # every cluster kept
    assert len(shape.nodes) <= max(max_agents, len(clusters))  # at most the limit (or one per cluster)
    assert len(shape.nodes) == min(len(nodes), max(max_agents, len(clusters)))  # no agent wasted
    assert set(map(id, shape.nodes)) <= set(map(id, nodes))
    assert [n.id for n in shape.nodes] == [n.id for n in nodes if n in shape.nodes]  # plan order
