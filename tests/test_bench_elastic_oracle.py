"""bench/elastic_oracle.py's schedules are what it says: a schedule's cost is its nodes' prices for their
lifetimes, a drained node takes no work past its first wave, no schedule of the family goes below the
floor for its own makespan, the blind figure is judged on draws it was not chosen on, and bad input gets
one line and exit 2."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.elastic_bound import usd_lower_bound
from bench.elastic_oracle import Schedules, first_placement, node_sets, permutations, search
from plastic.core.model import PREEMPTIBLE, TaskSpec
from tests.fakes.catalogs import THREE_SHAPES

ROOT = Path(__file__).resolve().parents[1]


def shape(name: str, market: str):
    return next(s for s in THREE_SHAPES if s.instance_type.name == name and s.market.value == market)


RELIABLE_NODE = shape("c5.large", "on-demand")
SPOT_NODE = shape("m5.large", "spot")


def task(tid, runtime, *parents, vcpus=1):
    return TaskSpec(tid, vcpus, 512, PREEMPTIBLE, runtime, parents=tuple(parents))


def test_a_schedule_pays_each_node_for_its_life_and_the_reliable_one_to_the_end():
    # two first-wave tasks on a spot node, their child on the reliable node (the spot node is drained)
    sched = Schedules([task("a_1", 10.0), task("a_2", 20.0), task("b_1", 5.0, "a_1", "a_2")], cap_s=1000.0)
    nodes = (RELIABLE_NODE, SPOT_NODE)
    usd, makespan = sched.cost(nodes, {"a_1": 1, "a_2": 1}, frozenset({1}))
    assert makespan == pytest.approx(60 + 20 + 5)
    spot_paid = 80.0  # released when its last first-wave task ends (over the 60 s minimum)
    assert usd == pytest.approx((0.085 * 85 + 0.0326 * spot_paid) / 3600)
    # not drained, the child may run on either node from 80 s on: the tie goes to the reliable node,
    # which is paid to the end anyway
    usd_open, _ = sched.cost(nodes, {"a_1": 1, "a_2": 1}, frozenset())
    assert usd_open == pytest.approx(usd)


def test_a_drained_node_takes_later_work_only_inside_the_time_it_is_paid_for():
    # the reliable node runs two 40 s tasks (busy to 100 s); on the spot node a_1 ends at 65 s, a_2 at 90 s.
    # b_1 (ready at 65 s) fits beside a_2 without lengthening the spot node's life; c_1 (ready at 90 s)
    # would lengthen it, so the drained node refuses it and it waits for the reliable node
    tasks = [task("r_1", 40.0), task("r_2", 40.0), task("a_1", 5.0), task("a_2", 30.0), task("b_1", 2.0, "a_1"),
             task("c_1", 2.0, "a_2")]
    sched = Schedules(tasks, cap_s=1000.0)
    first = {"r_1": 0, "r_2": 0, "a_1": 1, "a_2": 1}
    nodes = (RELIABLE_NODE, SPOT_NODE)
    usd, makespan = sched.cost(nodes, first, frozenset({1}))
    assert makespan == pytest.approx(102.0)
    assert usd == pytest.approx((0.085 * 102 + 0.0326 * 90) / 3600)
    usd, makespan = sched.cost(nodes, first, frozenset())  # not drained: c_1 runs on it from 90 s
    assert makespan == pytest.approx(100.0)
    assert usd == pytest.approx((0.085 * 100 + 0.0326 * 92) / 3600)


def test_node_sets_hold_the_first_wave_and_the_placement_fills_the_biggest_nodes_first():
    sets = node_sets(THREE_SHAPES, width_vcpus=6)
    assert sets and all(n[0].reliable and sum(x.usable.vcpus for x in n) >= 6 for n in sets)
    assert all(not x.reliable for n in sets for x in n[1:])
    sched = Schedules([task(f"a_{i}", float(i + 1)) for i in range(5)], cap_s=1000.0)
    nodes = (RELIABLE_NODE, shape("m5.large", "spot"), shape("c5.xlarge", "spot"))
    placement = first_placement(sched, nodes)
    assert [placement[f"a_{i}"] for i in range(4)] == [2, 2, 2, 2]  # the four shortest on the 4-vCPU node
    assert first_placement(sched, (RELIABLE_NODE,)) is None  # five 1-vCPU tasks on two vCPUs at once: no


def test_permutations_shuffle_runtimes_within_a_step_only():
    sched = Schedules([task("a_1", 1.0), task("a_2", 2.0), task("a_3", 3.0), task("z_1", 50.0)], cap_s=1000.0)
    worlds = permutations(sched, 20, random.Random(4))
    assert all(w.runtime["z_1"] == 50.0 for w in worlds)
    assert all(sorted(w.runtime[f"a_{i}"] for i in (1, 2, 3)) == [1.0, 2.0, 3.0] for w in worlds)
    assert len({tuple(w.runtime[f"a_{i}"] for i in (1, 2, 3)) for w in worlds}) > 1


dags = st.lists(st.tuples(st.integers(1, 2), st.floats(1.0, 120.0), st.lists(st.integers(0, 12), max_size=2)),
                min_size=1, max_size=10)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags, st.sets(st.integers(1, 3)))
def test_no_schedule_of_the_family_pays_less_than_the_floor_for_its_own_makespan(shape_, drained):
    tasks = []
    for i, (vcpus, runtime, parents) in enumerate(shape_):
        tasks.append(task(f"s{i % 3}_{i}", runtime, *sorted({f"s{p % 3}_{p}" for p in parents if p < i}),
                          vcpus=vcpus))
    sched = Schedules(tasks, cap_s=1e9)
    for nodes in node_sets(THREE_SHAPES, sum(t.vcpus for t in tasks if not t.parents))[:6]:
        placement = first_placement(sched, nodes)
        if placement is None:
            continue
        usd, makespan = sched.cost(nodes, placement, frozenset(d for d in drained if d < len(nodes)))
        assert usd >= usd_lower_bound(tasks, THREE_SHAPES, makespan, boot_s=60.0) * (1 - 1e-9)


def test_the_search_finds_the_known_runtime_schedule_no_dearer_than_the_blind_one():
    tasks = [task(f"p_{i}", 10.0 + i) for i in range(6)]
    tasks += [task(f"q_{i}", 0.5, f"p_{i}", f"p_{(i + 1) % 6}") for i in range(6)]
    found = search(Schedules(tasks, cap_s=1.1 * (60 + 15.5)), THREE_SHAPES, iterations=40, draws=6)
    assert 0 < found["known_usd"] <= found["blind_usd"] * (1 + 1e-9)
    assert "on-demand" in found["known_nodes"]


@pytest.mark.parametrize("args, says", [
    (["--traces", "nothing-like-this*"], "no trace of"),
    (["--permutations", "0"], "--permutations must be >= 1"),
    (["--judged", "1"], "--judged must be >= 2"),
])
def test_bad_input_gets_one_line_and_exit_2(args, says):
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "elastic_oracle.py"), *args], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and says in out.stderr
