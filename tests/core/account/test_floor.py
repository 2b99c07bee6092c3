"""The cost floor (plastic.core.account.floor): the arithmetic of its rules on hand-made tasks, under the
elastic benchmark's rules (a boot, a minimum charge) and a run's (neither), and what a run's floor may
leave out or stand in for without ever rising above a floor with the whole truth.  That no simulated run
of any policy pays less than it: the property in tests/test_bench_elastic.py."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.account.floor import (
    LONGEST_TASK,
    agent_shape,
    cheapest_vcpus_usd_per_hour,
    critical_path_s,
    run_floor,
    usd_lower_bound,
)
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt, TaskSpec
from tests.fakes.catalogs import THREE_CATALOG, THREE_SHAPES
from tests.fakes.workloads import dag

CATALOG, SHAPES = THREE_CATALOG, THREE_SHAPES
SPOT_VCPU_S = 0.0326 / 2 / 3600  # the cheapest vCPU-second: m5.large spot


def test_the_floor_of_a_hand_made_dag_is_the_arithmetic_of_its_rules():
    """split 30 s -> 8 sorts of 300 s -> merge 30 s, boot 60 s, capped at 450 s: the window is 390 s,
    every sort crosses its middle, so 8 vCPUs run at once; the reliable c5.large (2 vCPUs, the whole
    run) takes two of them; six more vCPUs boot: three m5.large spot is the cheapest way."""
    tasks = dag()
    assert critical_path_s(tasks) == 360.0
    work = 30 + 8 * 300 + 30
    core = 0.085 * (60 + 360) / 3600
    boots = 3 * 0.0326 * 60 / 3600
    busy = SPOT_VCPU_S * (work - 2 * 390)
    assert usd_lower_bound(tasks, SHAPES, 450.0) == pytest.approx(core + boots + busy)
    assert usd_lower_bound(tasks, SHAPES, 419.0) == math.inf  # shorter than boot + critical path


def test_the_cheapest_vcpus_are_an_unbounded_knapsack_over_the_shapes():
    assert cheapest_vcpus_usd_per_hour(SHAPES, 0) == 0.0
    assert cheapest_vcpus_usd_per_hour(SHAPES, 6) == pytest.approx(3 * 0.0326)  # three m5.large spot
    assert cheapest_vcpus_usd_per_hour(SHAPES, 5) == pytest.approx(3 * 0.0326)  # a vCPU more than asked


def test_with_no_boot_and_no_minimum_charge_the_floor_is_the_reliable_node_and_the_busy_rest():
    """A run's rules: four 2-vCPU tasks of 80 s by 100 s.  The c5.large is up for the critical path (80 s)
    and takes 2 x 100 vCPU-seconds of the 640; the other 440 at the m5.large spot's price per vCPU; no
    boot is paid, so no knapsack."""
    tasks = [TaskSpec(f"t{i}", 2, 1024, PREEMPTIBLE, runtime_s=80.0) for i in range(4)]
    want = 0.085 * 80 / 3600 + SPOT_VCPU_S * (640 - 2 * 100)
    assert usd_lower_bound(tasks, SHAPES, 100.0, boot_s=0.0, min_billed_s=0.0) == pytest.approx(want)
    # no rule of a reliable node: every vCPU-second at the cheapest price
    assert usd_lower_bound(tasks, SHAPES, 100.0, boot_s=0.0, min_billed_s=0.0,
                           one_reliable_node=False) == pytest.approx(SPOT_VCPU_S * 640)
    # no on-demand shape to keep: no policy of the rules exists
    spot_only = [s for s in SHAPES if not s.reliable]
    assert usd_lower_bound(tasks, spot_only, 100.0, boot_s=0.0, min_billed_s=0.0) == math.inf


ON_DEMAND_VCPU_S = 0.085 / 2 / 3600  # the cheapest on-demand vCPU-second: c5.large (c5.xlarge the same)


def test_reliable_work_is_paid_at_on_demand_prices_and_boots_on_demand_vcpus():
    """`preempt: false` work no policy may run on spot. Four such 2-vCPU tasks of 80 s by 100 s, no boot:
    the reliable node takes its share, the rest runs on on-demand vCPUs; a c5.xlarge as the reliable
    node (the same price per vCPU, more of the work at no further cost) is the cheapest way."""
    tasks = [TaskSpec(f"t{i}", 2, 1024, RELIABLE, runtime_s=80.0) for i in range(4)]
    want = 0.17 * 80 / 3600 + ON_DEMAND_VCPU_S * (640 - 4 * 100)
    assert usd_lower_bound(tasks, SHAPES, 100.0, boot_s=0.0, min_billed_s=0.0) == pytest.approx(want)
    # with a boot of 60 s and a cap of 420 s (window 360 s), four 300 s tasks cross the window's middle:
    # 8 on-demand vCPUs at once.  A c5.xlarge core leaves 4 to boot (a c5.xlarge or two c5.large)
    tasks = [TaskSpec(f"t{i}", 2, 1024, RELIABLE, runtime_s=300.0) for i in range(4)]
    want = 0.17 * 360 / 3600 + 0.17 * 60 / 3600 + ON_DEMAND_VCPU_S * (2400 - 4 * 360)
    assert usd_lower_bound(tasks, SHAPES, 420.0) == pytest.approx(want)
    # a task allowed one preemption may start on spot: priced as preemptible work
    some = [TaskSpec(f"t{i}", 2, 1024, Preempt(1), runtime_s=300.0) for i in range(4)]
    free = [TaskSpec(f"t{i}", 2, 1024, PREEMPTIBLE, runtime_s=300.0) for i in range(4)]
    assert usd_lower_bound(some, SHAPES, 420.0) == usd_lower_bound(free, SHAPES, 420.0) < want
    # reliable work, no reliable node kept, and no on-demand shape to buy: no policy can run it
    spot_only = [s for s in SHAPES if not s.reliable]
    assert usd_lower_bound(tasks, spot_only, 420.0, one_reliable_node=False) == math.inf
    assert math.isfinite(usd_lower_bound(free, spot_only, 420.0, one_reliable_node=False))


def test_a_runs_floor_says_what_it_was_computed_with():
    floor = run_floor([(2, 80.0)] * 4, SHAPES, 100.0, 0.01)
    assert floor is not None
    assert floor.usd == pytest.approx(0.085 * 80 / 3600 + SPOT_VCPU_S * 440)
    assert floor.cost_over_floor == pytest.approx(0.01 / floor.usd)
    assert (floor.boot_s, floor.cap_s, floor.critical_path_s, floor.critical_path_from) == (0.0, 100.0, 80.0,
                                                                                          LONGEST_TASK)
    assert (floor.tasks, floor.vcpu_s, floor.shapes, floor.one_reliable_node) == (4, 640.0, 6, True)
    assert floor.sentence(0.01) == (
        f"cost 0.010000 USD, {0.01 / floor.usd:.2f} x the floor ({floor.usd:.6f} USD: no policy that keeps an "
        "on-demand node pays less for these 4 tasks by this makespan; boot 0 s, critical path 80.0 s from the "
        "longest task, 6 node shapes)")


def test_a_runs_floor_is_none_when_there_is_nothing_to_bound_or_the_records_disagree():
    assert run_floor([], SHAPES, 100.0, 0.01) is None
    assert run_floor([(2, 0.0), (0, 5.0)], SHAPES, 100.0, 0.01) is None  # no runtime, no vCPUs: left out
    assert run_floor([(1, 120.0)], SHAPES, 100.0, 0.01) is None  # a task longer than the makespan
    assert run_floor([(1, 10.0)], [], 100.0, 0.01) is None
    free = run_floor([(1, 10.0)], SHAPES, 100.0, 0.0, one_reliable_node=False)
    assert free is not None and free.cost_over_floor == pytest.approx(0.0)
    # a node the run paid nothing for (its type not in the catalog): a floor of 0, and no ratio to it
    zero = run_floor([(1, 10.0)], [*SHAPES, agent_shape("unpriced", False, 2, 4096, 0.0)], 100.0, 0.002)
    assert zero is not None and zero.usd == 0.0 and zero.cost_over_floor is None
    assert zero.sentence(0.002).startswith("cost 0.002000 USD; the floor is 0.000000 USD (no policy that keeps")


dags = st.lists(st.tuples(st.integers(1, 4), st.floats(0.5, 900.0), st.lists(st.integers(0, 20), max_size=3)),
                min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(dags, st.floats(1.0, 3.0), st.booleans(), st.data())
def test_what_a_run_does_not_know_only_lowers_its_floor(shape, slack, reliable, data):
    """The report knows no parents (the longest task stands in for the critical path), may miss a task
    (a resumed run's adopted ones) and counts a task finished twice at its shorter run: each of those
    gives a floor no higher than the floor of the whole truth, so it stays a floor."""
    tasks = [TaskSpec(f"t{i}", vcpus, 0, runtime_s=runtime, parents=tuple(sorted({f"t{p}" for p in ps if p < i})))
             for i, (vcpus, runtime, ps) in enumerate(shape)]
    cap = critical_path_s(tasks) * slack
    kw = {"boot_s": 0.0, "min_billed_s": 0.0, "one_reliable_node": reliable}
    truth = usd_lower_bound(tasks, SHAPES, cap, **kw)
    assert math.isfinite(truth)
    stand_in = run_floor([(t.vcpus, t.runtime_s) for t in tasks], SHAPES, cap, 1.0, one_reliable_node=reliable)
    assert stand_in is not None and stand_in.usd <= truth * (1 + 1e-9)
    kept = data.draw(st.lists(st.booleans(), min_size=len(tasks), max_size=len(tasks)))
    shorter = data.draw(st.lists(st.floats(0.1, 1.0), min_size=len(tasks), max_size=len(tasks)))
    partial = run_floor([(t.vcpus, t.runtime_s * f) for t, k, f in zip(tasks, kept, shorter) if k], SHAPES, cap, 1.0,
                        one_reliable_node=reliable)
    assert partial is None or partial.usd <= stand_in.usd * (1 + 1e-9)
