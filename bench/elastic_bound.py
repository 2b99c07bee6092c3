"""The least any policy could pay for a trace under the elastic benchmark's rules: a lower bound.

bench/elastic.py compares the elastic controller with the static plan; a target such as "elastic <=
0.7 x static USD at <= 1.1 x its makespan" is only worth chasing on a trace where some policy could
meet it.  This module computes, for a trace, a makespan cap and the simulation's rules, a cost no
policy can go below, so that the benchmark can say when a target is out of reach by arithmetic and
how far the controller is from the floor.

The rules (those of bench/elastic_sim.py): a node is billed from its creation, boot included, for at
least ``min_billed_s``; no node exists before time 0, so nothing runs before ``boot_s``; one reliable
(on-demand) node lives from the start to the end (every policy of the benchmark keeps one); the run
ends by ``cap_s``.  The bound relaxes everything else (the DAG's order beyond its critical path, RAM,
which task goes where), so it is a floor, not a plan:

- every vCPU-second of work runs inside the window [boot_s, cap_s] of width W, on vCPUs that were
  bought: if the nodes bought have V vCPUs in all, V >= work / W; and a task longer than W / 2 runs
  across the window's midpoint wherever it is placed, so V is at least the vCPUs of all such tasks;
- each node pays its boot: at least boot_s x its price, so the boots cost at least boot_s x the
  cheapest way to buy V vCPUs (an unbounded knapsack over the shapes).  With short boots the minimum
  charge binds instead: a node is up at most W (its life after its boot lies inside the window), so
  it is billed at least max(boot + up, min_billed_s) >= up + max(boot_s, min_billed_s - W); the bound
  charges each node max(boot_s, min_billed_s - W) beside its busy time;
- each node pays for its busy time: at least the cheapest price per vCPU-second times the work;
- the reliable node costs its price for the whole run (at least boot_s + the critical path) and
  lends its vCPUs to the window for nothing more; the bound takes the cheapest on-demand shape's
  choice.

Not every policy keeps one reliable node from the start to the end: the elastic controller and the
reactive scaler replace a reliable node they lost or released (a few percent of random runs).  The
floor is meant to hold for those too (by an exchange of the replaced node's time against spot
capacity, which needs on-demand capacity to cost more per vCPU than the cheapest spot shape, as in
every catalog here); that argument is not written out here, so the hypothesis property in
tests/test_bench_elastic.py checks the floor against simulated runs of every policy, replacements
included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from plastic.core.model import Market, NodeShape, TaskSpec

MIN_BILLED_S = 60.0


def runtime_s(task: TaskSpec) -> float:
    """The simulation's runtime of a task (a trace's missing or zero runtime counts as 1 s or 1 ms)."""
    return max(task.runtime_s or 1.0, 0.001)


def critical_path_s(tasks: Sequence[TaskSpec]) -> float:
    """The longest chain of runtimes through the DAG."""
    by_id = {t.id: t for t in tasks}
    finish: dict[str, float] = {}
    for task in tasks:
        stack = [task.id]
        while stack:
            tid = stack[-1]
            if tid in finish:
                stack.pop()
                continue
            todo = [p for p in by_id[tid].parents if p not in finish]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            finish[tid] = runtime_s(by_id[tid]) + max((finish[p] for p in by_id[tid].parents), default=0.0)
    return max(finish.values(), default=0.0)


def cheapest_vcpus_usd_per_hour(shapes: Sequence[NodeShape], vcpus: int) -> float:
    """The least hourly price of a set of nodes with at least `vcpus` usable vCPUs in all."""
    if vcpus <= 0:
        return 0.0
    best = [0.0] + [math.inf] * vcpus
    for k in range(1, vcpus + 1):
        best[k] = min(s.usd_per_hour + best[max(k - s.usable.vcpus, 0)] for s in shapes)
    return best[vcpus]


def usd_lower_bound(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], cap_s: float, *, boot_s: float = 60.0,
                    min_billed_s: float = MIN_BILLED_S) -> float:
    """No policy that keeps one reliable node alive and finishes by `cap_s` pays less (math.inf when
    `cap_s` is shorter than the boot plus the critical path)."""
    end_s = boot_s + critical_path_s(tasks)
    if cap_s < end_s - 1e-9 * end_s:  # a run that ends at the critical path, summed in another order
        return math.inf
    cap_s = max(cap_s, end_s)
    window_s = cap_s - boot_s
    work = sum(t.vcpus * runtime_s(t) for t in tasks)
    # a task longer than half the window runs across its middle; one of exactly half (a chain of two
    # such halves, summed in another order) may not, so the test leaves the last bits of a float out
    across_middle = sum(t.vcpus for t in tasks if runtime_s(t) > window_s / 2 * (1 + 1e-9))
    usd_per_vcpu_s = min(s.usd_per_hour / s.usable.vcpus for s in shapes) / 3600.0
    best = math.inf
    for core in (s for s in shapes if s.market is Market.ON_DEMAND):
        core_usd = core.usd_per_hour * max(end_s, min_billed_s) / 3600.0
        rest_work = max(work - core.usable.vcpus * window_s, 0.0)
        vcpus = max(math.ceil(rest_work / window_s - 1e-9), across_middle - core.usable.vcpus, 0)
        boots_usd = cheapest_vcpus_usd_per_hour(shapes, vcpus) * max(boot_s, min_billed_s - window_s) / 3600.0
        best = min(best, core_usd + boots_usd + usd_per_vcpu_s * rest_work)
    return best
