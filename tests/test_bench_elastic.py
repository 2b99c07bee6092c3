"""The elastic-cluster simulation of bench/elastic.py is honest: on a small hand-made DAG every policy
finishes every task, a node costs its price for its lifetime (at least 60 s), an interruption puts the
work back in the queue and the run still completes, and a seed gives the same run twice."""

from __future__ import annotations

import pytest

from bench.elastic_sim import MIN_BILLED_S, Simulation, simulate
from plastic.core.model import (
    PREEMPTIBLE,
    RELIABLE,
    Catalog,
    InstanceType,
    Preempt,
    TaskSpec,
    Workload,
    node_shapes,
)
from plastic.core.sizing import plan_workload

CATALOG = Catalog((
    InstanceType("c5.large", 2, 4096, 0.085, 0.0349, "<5%"),
    InstanceType("c5.xlarge", 4, 8192, 0.17, 0.0748, "<5%"),
    InstanceType("m5.large", 2, 8192, 0.096, 0.0326, "15-20%"),
))
SHAPES = node_shapes(CATALOG)


def dag() -> list[TaskSpec]:
    """split (reliable) -> 8 x sort (preempt 2, 300 s) -> merge (reliable)."""
    sorts = [TaskSpec(f"sort{i}", 1, 1024, Preempt(2), 300.0, parents=("split",)) for i in range(8)]
    return [TaskSpec("split", 1, 512, RELIABLE, 30.0), *sorts,
            TaskSpec("merge", 1, 1024, RELIABLE, 30.0, parents=tuple(t.id for t in sorts))]


def plan_of(tasks):
    return plan_workload(Workload(tuple(tasks)), CATALOG)


@pytest.mark.parametrize("policy", ["static", "elastic", "reactive"])
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
    from plastic.core.elastic_model import ElasticPolicy

    tasks = dag()
    plan = plan_of(tasks)
    blind = simulate(tasks, plan, SHAPES, "elastic", boot_s=60.0)
    ahead = simulate(tasks, plan, SHAPES, "elastic", boot_s=60.0, elastic_policy=ElasticPolicy(lead_s=60.0))
    assert ahead.completion == blind.completion == 1.0
    assert ahead.makespan_s <= blind.makespan_s - 25  # the sorts did not wait a whole boot after split
    assert ahead.usd <= blind.usd * 1.05
