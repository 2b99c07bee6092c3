"""The elastic-cluster simulation of bench/elastic.py is honest: on a small hand-made DAG every policy
finishes every task, a node costs its price for its lifetime (at least 60 s), an interruption puts the
work back in the queue and the run still completes, and a seed gives the same run twice."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bench.elastic_sim import MIN_BILLED_S, Simulation, simulate
from bench.sim_policies import waiting_task
from plastic.core.model import (
    PREEMPTIBLE,
    RELIABLE,
    Preempt,
    TaskSpec,
    Workload,
)
from plastic.core.planning.sizing import plan_workload
from tests.fakes.catalogs import THREE_CATALOG, THREE_SHAPES
from tests.fakes.workloads import dag

CATALOG, SHAPES = THREE_CATALOG, THREE_SHAPES


def plan_of(tasks):
    return plan_workload(Workload(tuple(tasks)), CATALOG)


@pytest.mark.parametrize("policy", ["static", "elastic", "reactive", "reactive-cold"])
def test_every_policy_finishes_and_costs_price_times_lifetime(policy):
    tasks = dag()
    sim = Simulation(tasks, plan_of(tasks), SHAPES, policy, boot_s=60.0)
    res = sim.run()
    assert res.completion == 1.0 and all(t.state == "done" for t in sim.tasks.values())
    assert res.makespan_s >= 60 + 30 + 300 + 30  # boot, then the critical path
    assert res.usd == pytest.approx(sum(n.shape.usd_per_hour * max(n.ended_at - n.created_at, MIN_BILLED_S) / 3600
                                        for n in sim.nodes.values()))
    assert all(n.ended_at is not None and n.ended_at <= res.makespan_s for n in sim.nodes.values())
    if policy == "elastic":
        assert any(n.spot for n in sim.nodes.values())  # the scatter got spot nodes the start did not have
    if policy == "reactive-cold":  # started as Toil's scaler is: the reliable node alone, the rest bought
        assert [n.shape.reliable for n in sim.nodes.values() if n.created_at == 0.0] == [True]
        assert len(sim.nodes) > 1


def test_interruptions_requeue_work_and_the_run_completes_the_same_way_for_a_seed():
    tasks = dag()
    plan = plan_of(tasks)
    runs = [simulate(tasks, plan, SHAPES, "elastic", seed=7, rate_per_hour=30.0, boot_s=10.0) for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0].interruptions >= 1 and runs[0].preemptions >= 1 and runs[0].completion == 1.0
    calm = simulate(tasks, plan, SHAPES, "elastic", seed=7, rate_per_hour=0.0, boot_s=10.0)
    assert calm.interruptions == 0 and calm.makespan_s <= runs[0].makespan_s


def test_static_does_not_replace_lost_spot_nodes_elastic_does():
    tasks = [TaskSpec(f"p{i}", 2, 2048, PREEMPTIBLE, 600.0) for i in range(6)]
    plan = plan_of(tasks)
    static = Simulation(tasks, plan, SHAPES, "static", seed=3, rate_per_hour=20.0, boot_s=10.0)
    static.run()
    elastic = Simulation(tasks, plan, SHAPES, "elastic", seed=3, rate_per_hour=20.0, boot_s=10.0)
    elastic.run()
    assert len(static.nodes) == len(plan.nodes)  # nothing bought after the start
    assert len(elastic.nodes) > sum(1 for n in elastic.nodes.values() if n.created_at == 0.0) >= 1


def test_looking_a_boot_ahead_has_the_scatter_nodes_up_when_split_ends():
    """split runs 30 s on the first node; the sorts' nodes boot 60 s.  Looking a boot ahead (the trace's
    runtimes as estimates) they are asked for while split runs, so the run ends sooner for no more money
    than waiting for the queued sorts."""
    from plastic.core.elastic.model import ElasticPolicy

    tasks = dag()
    plan = plan_of(tasks)
    blind = simulate(tasks, plan, SHAPES, "elastic", boot_s=60.0)
    ahead = simulate(tasks, plan, SHAPES, "elastic", boot_s=60.0, elastic_policy=ElasticPolicy(lead_s=60.0))
    assert ahead.completion == blind.completion == 1.0
    assert ahead.makespan_s <= blind.makespan_s - 25  # the sorts did not wait a whole boot after split
    assert ahead.usd <= blind.usd * 1.05


def test_short_estimates_are_what_the_controller_is_told_and_the_tasks_still_run_their_runtimes():
    """estimate_factor 0.5: the controller's estimates are half the trace's runtimes (queued work, the
    running tasks' ends, the DAG forecast), the tasks run their full runtimes, and the run completes."""
    from plastic.core.elastic.model import ElasticPolicy

    tasks = dag()
    sim = Simulation(tasks, plan_of(tasks), SHAPES, "elastic", boot_s=60.0, estimate_factor=0.5,
                     elastic_policy=ElasticPolicy(lead_s=60.0))
    assert waiting_task(sim, sim.tasks["sort0"]).runtime_s == 150.0
    assert {t.id: t.runtime_s for t in sim.estimated}["merge"] == 15.0
    res = sim.run()
    assert res.completion == 1.0 and res.makespan_s >= 30 + 300 + 30  # the critical path at full runtimes


# ------------------------------------ the cost floor (plastic.core.account.floor, as bench/elastic_bound.py gives it)
# Its arithmetic on a hand-made DAG: tests/core/account/test_floor.py.  Here: no simulated run goes below it.

dags = st.lists(st.tuples(st.integers(1, 4), st.floats(1.0, 900.0),
                          st.sampled_from([RELIABLE, PREEMPTIBLE, Preempt(1)]),
                          st.lists(st.integers(0, 30), max_size=3)), min_size=1, max_size=14)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags, st.sampled_from(["static", "elastic", "elastic-allow", "reactive", "reactive-cold"]),
       st.sampled_from([0.0, 40.0]),
       st.sampled_from([10.0, 60.0]))
# a run that ends exactly at boot + the critical path, summed in another order than the floor's (it
# once made the floor infinite by the last bit of a float)
@example([(1, 502.07010279926095, RELIABLE, []), (1, 1.388065461654719, RELIABLE, [0])], "static", 0.0, 10.0)
# a chain of two tasks of half the window each, summed a float bit over half: not across the middle
@example([(1, 124.0, RELIABLE, []), (1, 123.03881208649155, RELIABLE, []), (1, 123.03881208649155, RELIABLE, [1])],
         "static", 0.0, 10.0)
def test_no_simulated_run_pays_less_than_the_floor_for_its_own_makespan(shape, policy, rate, boot_s):
    """Any DAG, any policy, calm or interrupted: every run that finishes pays at least the floor computed
    with its own makespan as the cap (the floor is a lower bound, or the benchmark's verdicts would lie).
    Only the static plan may leave work undone, and only after an interruption."""
    from bench.elastic_bound import usd_lower_bound
    from plastic.core.elastic.model import ElasticPolicy

    tasks = []
    for i, (vcpus, runtime, preempt, parents) in enumerate(shape):
        ps = tuple(sorted({f"t{p}" for p in parents if p < i}))
        tasks.append(TaskSpec(f"t{i}", vcpus, 1024 * vcpus, preempt, runtime, parents=ps))
    kw = {}
    if policy.startswith("elastic"):  # and with a makespan allowance (its runs too may not go below the floor)
        allowance = 0.1 if policy == "elastic-allow" else 0.0
        policy, kw = "elastic", {"elastic_policy": ElasticPolicy(lead_s=boot_s, makespan_allowance=allowance)}
    res = simulate(tasks, plan_of(tasks), SHAPES, policy, seed=5, rate_per_hour=rate, boot_s=boot_s, **kw)
    if policy == "static" and rate > 0 and res.completion < 1.0:
        # The static plan replaces nothing: a task bigger than the reliable node is stranded when its spot
        # node is lost. That run did not do the work, so the floor of the work says nothing about it.
        assert res.interruptions >= 1
        return
    assert res.completion == 1.0
    assert res.usd >= usd_lower_bound(tasks, SHAPES, res.makespan_s, boot_s=boot_s) * (1 - 1e-9)
    # where the money went adds up to what was paid, no part below zero, and the work is the tasks' own
    assert sum(res.spend_usd.values()) == pytest.approx(res.usd, rel=1e-9)
    assert min(res.spend_usd.values()) >= -1e-12
    work_vcpu_s = sum(t.vcpus * t.runtime_s for t in tasks)
    cheapest, dearest = (f(s.usd_per_hour / s.usable.vcpus for s in SHAPES) / 3600.0 for f in (min, max))
    work_usd = res.spend_usd.get("spot work", 0.0) + res.spend_usd.get("reliable work", 0.0)
    assert cheapest * work_vcpu_s * (1 - 1e-9) <= work_usd <= dearest * work_vcpu_s * (1 + 1e-9)


def test_the_static_plan_strands_a_task_too_big_for_its_reliable_node_when_its_spot_node_is_lost():
    """The case the property above lets through, pinned: one 3-vCPU preemptible task planned on a spot
    c5.xlarge beside a reliable c5.large; with the spot node interrupted the static plan buys nothing and
    the task never finishes, while the elastic controller replaces the node and completes."""
    from plastic.core.elastic.model import ElasticPolicy

    tasks = [TaskSpec("t0", 3, 3072, PREEMPTIBLE, 617.0)]
    static = simulate(tasks, plan_of(tasks), SHAPES, "static", seed=1, rate_per_hour=40.0, boot_s=10.0)
    elastic = simulate(tasks, plan_of(tasks), SHAPES, "elastic", seed=1, rate_per_hour=40.0, boot_s=10.0,
                       elastic_policy=ElasticPolicy(lead_s=10.0))
    assert static.interruptions >= 1 and static.completion == 0.0
    assert elastic.interruptions >= 1 and elastic.completion == 1.0


def test_other_traces_are_read_from_the_directory_given_and_an_empty_one_is_one_line(tmp_path):
    """bench/elastic.py --trace-dir: traces not in the repository (bench/wfgen.py makes synthetic ones)."""
    root = Path(__file__).resolve().parents[1]
    shutil.copy(root / "data/wfinstances/helloworld-forkjoin-10-chameleon.json", tmp_path / "other-shape.json")
    (tmp_path / "notes.txt").write_text("not a trace\n")
    run = subprocess.run([sys.executable, "bench/elastic.py", "--trace-dir", str(tmp_path), "--seeds", "1"],
                         cwd=root, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "other-shape.json" in run.stdout and "target: elastic completes 100%: met" in run.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    run = subprocess.run([sys.executable, "bench/elastic.py", "--trace-dir", str(empty)], cwd=root,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == [f"bench/elastic.py: no trace matches '*.json' in {empty}"]


def test_a_local_replay_of_an_unknown_condition_is_one_line():
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "bench/elastic.py", "--local", "data/wfinstances/x.json",
                          "--local-conditions", "calm,stormy"], cwd=root, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == [
        "bench/elastic.py: --local-conditions is calm, interrupted or both, not 'calm,stormy'"]


@pytest.mark.parametrize("args", [("--local-allowance", "1.5"), ("--local-allowance", "0.1", "--local-boot", "0")])
def test_a_local_replay_allowance_outside_0_1_or_without_a_boot_is_one_line(args):
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "bench/elastic.py", "--local", "data/wfinstances/x.json", *args],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == [
        "bench/elastic.py: --local-allowance is a fraction in (0, 1) and needs a boot (--local-boot or "
        "--boot-seconds above 0)"]


def test_a_local_replay_without_a_seed_is_one_line():
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "bench/elastic.py", "--local", "data/wfinstances/x.json",
                          "--local-seeds", "0"],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == ["bench/elastic.py: --local-seeds is 1 or more, not 0"]
