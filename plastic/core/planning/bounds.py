"""What a plan's cost is measured against: lower bounds, each saying what it bounds and whether it bounds
this plan.

Two bounds, both true of any cluster that does what they say:

- at once (the LP relaxation, lower_bound.py): no cluster that runs every task at once (--concurrent),
  or each wave at once (the default), costs less.  A budget-limited plan that queues tasks does
  neither, so this bound is not one of its cost: it is what the budget would need to stop the queueing.
- one after another: no cluster that can run every task at all, the tasks queueing as they must, costs
  less.  Every plan plastic makes keeps an on-demand node, holds each task on some node it may run on,
  and an on-demand node for each task that runs on demand or escalates there (planner.
  ensure_reliable_capacity); the least such a cluster can cost, task by task, bounds every plan.

The plan's lower bound is the greatest of those that bound it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from plastic.core.model import NodeShape, TaskSpec
from plastic.core.planning.packing import ShapeMenu
from plastic.core.planning.plan import EACH_WAVE_AT_ONCE, EVERY_TASK_AT_ONCE, ONE_AFTER_ANOTHER, Bound


def one_after_another_usd_per_hour(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape]) -> float:
    """No cluster that can run every task of `tasks` (one after another if need be) and keeps an
    on-demand node costs less: for each task, an on-demand node that holds it, or the cheapest
    on-demand node plus the cheapest node that holds it; the dearest task decides."""
    menu = ShapeMenu(shapes)
    reliable = [s.usd_per_hour for s in menu.shapes if s.reliable]
    one_on_demand = reliable[0] if reliable else math.inf
    floor = one_on_demand
    kinds = {(t.vcpus, t.ram_mib, t.preempt.max_preemptions is None, t.instance_type) for t in tasks}
    for vcpus, ram_mib, may_stay_on_spot, pinned in kinds:
        on_demand = menu.holding_demand(vcpus, ram_mib, False, pinned)
        need = on_demand[0].usd_per_hour if on_demand else math.inf
        if may_stay_on_spot:  # never escalates to on-demand: any node may hold it, beside the on-demand one
            anywhere = menu.holding_demand(vcpus, ram_mib, True, pinned)
            if anywhere:
                need = min(need, one_on_demand + anywhere[0].usd_per_hour)
        floor = max(floor, need)
    return floor


def plan_bounds(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], *, at_once_usd_per_hour: float,
                concurrent: bool, runs_at_once: bool) -> tuple[Bound, ...]:
    """The bounds of a plan of `tasks`, the one that binds first (the greatest of those that bound the
    plan), then the others.  `at_once_usd_per_hour` is the LP bound of every task (`concurrent`) or of
    the costliest wave; `runs_at_once`: the plan runs them so (not a budget plan that queues tasks)."""
    at_once = Bound(at_once_usd_per_hour, EVERY_TASK_AT_ONCE if concurrent else EACH_WAVE_AT_ONCE,
                    applies=runs_at_once)
    any_cluster = Bound(one_after_another_usd_per_hour(tasks, shapes), ONE_AFTER_ANOTHER)
    return tuple(sorted((at_once, any_cluster), key=lambda b: (not b.applies, -b.usd_per_hour)))
