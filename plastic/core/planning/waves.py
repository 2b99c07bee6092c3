"""Waves: the sets of tasks of a workflow that can run at the same time.

Without runtimes a wave is a level of the DAG (tasks whose longest path from a
source has the same length).  With every runtime known, the waves are the
peaks of the as-soon-as-possible schedule on unlimited resources: the set of
tasks running just before the first task of a burst ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from plastic.core.errors import PlanningError
from plastic.core.model import TaskSpec


@dataclass(frozen=True, slots=True)
class Waves:
    sets: tuple[tuple[TaskSpec, ...], ...]
    basis: str  # "DAG levels" | "ASAP schedule from runtimes"
    makespan_s: float | None = None  # of the ASAP schedule, when runtimes are known


def topological_order(tasks: Sequence[TaskSpec]) -> list[TaskSpec]:
    """Kahn's algorithm; a cycle (or an unknown parent) is a PlanningError."""
    by_id = {t.id: t for t in tasks}
    indegree = {t.id: 0 for t in tasks}
    children: dict[str, list[str]] = {t.id: [] for t in tasks}
    for t in tasks:
        for p in t.parents:
            if p not in by_id:
                raise PlanningError(f"parent {p!r} is not a task", source=t.id, field="parents")
            indegree[t.id] += 1
            children[p].append(t.id)
    ready = [t.id for t in tasks if indegree[t.id] == 0]
    order: list[TaskSpec] = []
    while ready:
        tid = ready.pop()
        order.append(by_id[tid])
        for c in children[tid]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    if len(order) != len(tasks):
        stuck = next(tid for tid, d in indegree.items() if d > 0)
        raise PlanningError("the task graph has a cycle", source=stuck, field="parents")
    return order


def find_waves(tasks: Sequence[TaskSpec]) -> Waves:
    if not tasks:
        return Waves((), "DAG levels")
    order = topological_order(tasks)
    if all(t.runtime_s is not None for t in tasks):
        return _asap_waves(order)
    level: dict[str, int] = {}
    for t in order:
        level[t.id] = 1 + max((level[p] for p in t.parents), default=-1)
    groups: dict[int, list[TaskSpec]] = {}
    for t in tasks:
        groups.setdefault(level[t.id], []).append(t)
    return Waves(tuple(tuple(groups[k]) for k in sorted(groups)), "DAG levels")


def _asap_waves(order: Sequence[TaskSpec]) -> Waves:
    finish: dict[str, float] = {}
    events: list[tuple[float, int, str]] = []  # (time, 0=end / 1=start, id)
    for t in order:
        start = max((finish[p] for p in t.parents), default=0.0)
        finish[t.id] = start + max(float(t.runtime_s or 0.0), 1e-6)  # zero-length tasks still run
        events.append((start, 1, t.id))
        events.append((finish[t.id], 0, t.id))
    events.sort()
    by_id = {t.id: t for t in order}
    running: dict[str, None] = {}
    peaks: list[tuple[TaskSpec, ...]] = []
    rising = False
    for _, kind, tid in events:
        if kind == 1:
            running[tid] = None
            rising = True
        else:
            if rising:
                peaks.append(tuple(by_id[i] for i in running))
                rising = False
            running.pop(tid, None)
    return Waves(tuple(peaks), "ASAP schedule from runtimes", max(finish.values(), default=0.0))
