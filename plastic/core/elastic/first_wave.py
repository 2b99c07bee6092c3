"""The nodes an elastic cluster starts with, pure: the plan's, but for those the controller sizes itself.

The plan (plastic plan) packs the whole workflow by room; the elastic cluster starts with its on-demand
nodes and the nodes of its first wave (tasks with no parent) and the controller
(plastic.core.elastic.controller) grows the rest as the work comes.  Looking a boot ahead, the
controller sizes some of the first wave itself, as it sizes every later wave: the tasks of a step whose
runtimes spread (plastic.core.elastic.spread), and, under a makespan allowance, tasks short enough to
run back to back on one vCPU (plastic.core.elastic.forecast.back_to_back).  The nodes the plan planned
for those do not start (one on-demand node always does); the controller buys what they need at its
first look.  A local elastic run (plastic.run.local_run_cluster) and bench/elastic_sim.py start with
`starting_nodes`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from plastic.core.elastic.forecast import per_slot
from plastic.core.elastic.model import ElasticPolicy
from plastic.core.elastic.spread import spreading_steps
from plastic.core.model import Market, NodeShape, TaskSpec
from plastic.core.planning.plan import PlannedNode, step_of


def starting_nodes(nodes: Sequence[PlannedNode], tasks: Sequence[TaskSpec],
                   later: frozenset[str] = frozenset()) -> tuple[PlannedNode, ...]:
    """The planned nodes an elastic cluster starts with: the on-demand ones and those planned for the
    first wave (tasks with no parent), but not one planned for a first-wave task ``later`` names (a task
    whose node the controller sizes itself: `sized_by_controller`), and at
    least one on-demand node (the plan always has one); the controller grows the rest as the work comes."""
    first = {t.id for t in tasks if not t.parents}
    chosen = tuple(n for n in nodes if (n.market is Market.ON_DEMAND or first & set(n.task_ids))
                   and not later & first & set(n.task_ids))
    if not any(n.market is Market.ON_DEMAND for n in chosen):
        chosen = tuple(n for n in nodes if n.market is Market.ON_DEMAND)[:1] + chosen
    return chosen or tuple(nodes)[:1]


def sized_by_controller(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], policy: ElasticPolicy,
                        step: Callable[[str], str] = step_of) -> frozenset[str]:
    """The plan's tasks whose nodes the elastic controller sizes itself rather than take the plan's
    first-wave nodes: those of steps whose runtimes spread (`spreading_steps`), and, under a makespan
    allowance, the tasks short enough that two or more run back to back on one vCPU within the slack
    (plastic.core.elastic.forecast.per_slot, as back_to_back counts them); none unless the controller
    looks ahead (``policy.lead_s``, the boot, > 0), as only then does it do either."""
    if policy.lead_s <= 0:
        return frozenset()
    steps = spreading_steps(tasks, shapes, band_weight=policy.band_weight, boot_s=policy.lead_s, step=step)
    a = policy.makespan_allowance
    return frozenset(t.id for t in tasks if step(t.id) in steps
                     or (a > 0 and (t.runtime_s or 0.0) > 0 and per_slot(a, policy.lead_s, t.runtime_s) >= 2))
