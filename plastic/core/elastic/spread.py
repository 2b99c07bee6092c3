"""Node sizes for tasks whose runtimes spread, pure.

A node is paid from its creation until it is released, and the elastic controller releases a node when
its last task ends.  A node that takes k tasks of one step at once is therefore paid for about its boot
plus the longest of their k runtimes, and when those runtimes spread widely (one tool reading inputs of
very different sizes: 7 minutes for one, 72 for another) the longest of k grows with k: the vCPUs of the
tasks that ended early are paid for, idle, until the last one ends.  Packing by room alone (the
cheapest price per vCPU, so the largest nodes) then pays for that idle time.

`spread_fill` chooses, for a group of like tasks of one step, the shape and the number of tasks a node
takes that cost least per task in expectation:

    price(shape) x (boot + E[longest of k runtimes]) / k

over every shape that holds the task and every k from 1 to what the shape holds.  The runtimes are the
step's spread (`spread_summary`: quantiles of what the shell knows: its tool's recorded runtimes, else
the plan's), so nothing here knows a single task's runtime.  When the runtimes do not spread, E[longest
of k] is the runtime for every k and the rule picks the cheapest price per task, as packing by room does.
The idle room the rule leaves on a node is not counted as free for other work: a node sized this way
holds its k tasks and is released when they end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from plastic.core.elastic.model import WaitingTask
from plastic.core.elastic.packing import Group, group_tasks, merge_steps, task_of, tasks_of, weighted_shapes
from plastic.core.model import NodeShape, TaskSpec
from plastic.core.planning.packing import PackedNode, ShapeMenu
from plastic.core.planning.plan import step_of
from plastic.core.stats import percentile

SPREAD_POINTS = 20  # quantiles kept of a step's runtimes (each stands for 1/20 of them)


def spread_summary(runtimes_s: Iterable[float], points: int = SPREAD_POINTS) -> tuple[float, ...]:
    """Runtimes summarised as ``points`` equally likely values (the percentiles at the middles of equal
    shares, plastic.core.stats.percentile, sorted); fewer when there are fewer runtimes; () when there
    are none."""
    values = sorted(float(r) for r in runtimes_s if r is not None and r > 0)
    if len(values) <= points:
        return tuple(values)
    return tuple(percentile(values, (i + 0.5) * 100.0 / points) for i in range(points))


def expected_longest_s(summary: Sequence[float], k: int) -> float:
    """E[the longest of k runtimes drawn from the summary's equally likely values] (0 when it is empty)."""
    n = len(summary)
    total, below = 0.0, 0.0
    for i, value in enumerate(summary, start=1):
        upto = (i / n) ** k
        total += value * (upto - below)
        below = upto
    return total


@dataclass(frozen=True, slots=True)
class Fill:
    """Nodes of ``shape`` taking ``per_node`` tasks each, at ``usd_per_task`` expected."""

    shape: NodeShape
    per_node: int
    usd_per_task: float


def spread_fill(shapes: Sequence[NodeShape], vcpus: int, ram_mib: int, summary: Sequence[float],
                boot_s: float, most: int | None = None) -> Fill | None:
    """The shape and tasks per node (``most`` at most) that cost least per task (module docstring),
    among ``shapes`` (each taken to hold the task); None when no shape holds one or there is no summary."""
    if not summary or (most is not None and most < 1):
        return None
    longest = [0.0]  # E[longest of k], k = 1.. as needed
    best: Fill | None = None
    for shape in shapes:
        holds = min(shape.usable.vcpus // max(vcpus, 1), shape.usable.ram_mib // max(ram_mib, 1))
        if most is not None:
            holds = min(holds, most)
        while len(longest) <= holds:
            longest.append(expected_longest_s(summary, len(longest)))
        for k in range(1, holds + 1):
            usd = shape.usd_per_hour * (boot_s + longest[k]) / 3600.0 / k
            if best is None or usd < best.usd_per_task - 1e-15:
                best = Fill(shape, k, usd)
    return best


def spread_nodes(shapes: Sequence[NodeShape], vcpus: int, ram_mib: int, count: int, summary: Sequence[float],
                 boot_s: float) -> list[tuple[NodeShape, int]] | None:
    """Nodes for ``count`` like tasks whose runtimes spread: (shape, tasks) each, by `spread_fill`, the
    last ones for what is left; None when the spread changes nothing (with every runtime at the
    summary's mean the same shape and count win: packing by room serves the group as well)."""
    fill = spread_fill(shapes, vcpus, ram_mib, summary, boot_s)
    flat = spread_fill(shapes, vcpus, ram_mib, (sum(summary) / len(summary),) if summary else (), boot_s)
    if fill is None or flat is None or (fill.shape == flat.shape and fill.per_node == flat.per_node):
        return None
    out: list[tuple[NodeShape, int]] = []
    left = count
    while left > 0:
        step = spread_fill(shapes, vcpus, ram_mib, summary, boot_s, most=left)
        if step is None:
            break
        full = left // step.per_node
        out += [(step.shape, step.per_node)] * full
        left -= full * step.per_node
    return out


Spreads = tuple[tuple[str, tuple[float, ...]], ...]  # (step, its runtimes as spread_summary gives them)


def plan_spreads(tasks: Iterable[TaskSpec], step: Callable[[str], str] = step_of) -> Spreads:
    """Each step's runtimes in the plan (the tasks that carry one), summarised; by step name."""
    by_step: dict[str, list[float]] = {}
    for t in tasks:
        if t.runtime_s is not None and t.runtime_s > 0:
            by_step.setdefault(step(t.id), []).append(t.runtime_s)
    return tuple((name, spread_summary(values)) for name, values in sorted(by_step.items()))


def spreading_steps(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], *, band_weight: float, boot_s: float,
                    step: Callable[[str], str] = step_of) -> frozenset[str]:
    """The plan's steps whose runtimes spread so that their tasks get other nodes than packing by room
    gives them (`spread_nodes`), grouped and with the shapes compared as the controller does it."""
    spreads = dict(plan_spreads(tasks, step))
    menu = ShapeMenu(weighted_shapes(shapes, band_weight))
    waiting = (WaitingTask(t.id, t.demand, t.preempt.max_preemptions == 0, t.instance_type, step=step(t.id))
               for t in tasks)
    return frozenset(g.step for g in group_tasks(waiting, frozenset(spreads))
                     if g.step and _sized(g, menu, spreads, boot_s) is not None)


def _sized(g: Group, menu: ShapeMenu, spreads: Mapping[str, Sequence[float]],
           boot_s: float) -> list[tuple[NodeShape, int]] | None:
    """`spread_nodes` for a group of like tasks of one step, by its step's spread (None: no spread, or
    it changes nothing)."""
    summary = spreads.get(g.step or "")
    return spread_nodes(menu.holding(task_of(g)), g.vcpus, g.ram_mib, len(g.task_ids), summary,
                        boot_s) if summary else None


def spread_packed(groups: Sequence[Group], menu: ShapeMenu, spreads: Mapping[str, Sequence[float]],
                  boot_s: float) -> tuple[list[PackedNode], list[Group]]:
    """New nodes for the groups of one step whose runtimes spread (`spread_nodes`, ``spreads`` by step),
    and the other groups, grouped again without their steps, left for packing by room as before."""
    nodes: list[PackedNode] = []
    rest: list[Group] = []
    for g in groups:
        sized = _sized(g, menu, spreads, boot_s)
        if sized is None:
            rest.append(g)
            continue
        todo = tasks_of([g])
        for shape, k in sized:
            nodes.append(PackedNode(shape, tuple(todo[:k])))
            todo = todo[k:]
    return nodes, merge_steps(rest)
