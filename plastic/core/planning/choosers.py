"""What the planner's strategies pack by (see planner.py): the order the tasks go in, what each task
is worth, and the chooser of a new node's shape.

- `seeds`: the paper's order (reliable first, then by the price of the cheapest instance each task
  needs, largest first) and the cheapest shape that holds the task;
- look-ahead: decreasing value (the LP's dual prices, or the bottleneck share of the cheapest shape
  that holds the task) and the shape that, filled on paper with the task and the next ones in line,
  buys the most value per dollar.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from plastic.core.model import NodeShape, TaskSpec, type_allowed
from plastic.core.planning.lower_bound import Prices
from plastic.core.planning.packing import Shapes, menu_of, unplaceable

# ---------------------------------------------------------------- values and orderings

def task_value(t: TaskSpec, prices: Prices) -> float:
    return prices.value_of(t.vcpus, t.ram_mib, reliable=t.preempt.max_preemptions == 0)


def seeds_order(tasks: Sequence[TaskSpec], shapes: Shapes) -> list[TaskSpec]:
    """The paper's priority (reliable first) then the seeds' (price of the instance needed, largest first)."""
    menu = menu_of(shapes)
    return sorted(tasks, key=lambda t: (t.preempt.preemptible, -menu.cheapest(t).usd_per_hour, -t.vcpus,
                                        -t.ram_mib, t.id))


def value_order(tasks: Sequence[TaskSpec], prices: Prices) -> list[TaskSpec]:
    """Reliable first, pinned next, then decreasing dual value (first-fit decreasing)."""
    return sorted(
        tasks,
        key=lambda t: (t.preempt.preemptible, t.instance_type is None, -task_value(t, prices), -t.vcpus,
                       -t.ram_mib, t.id),
    )


# ---------------------------------------------------------------- shape choosers

def seeds_chooser(shapes: Shapes):
    menu = menu_of(shapes)

    def choose(task: TaskSpec, i: int, ordered: Sequence[TaskSpec]) -> NodeShape:
        return menu.cheapest(task)
    return choose


def bottleneck_values(tasks: Sequence[TaskSpec], shapes: Shapes) -> dict[str, float]:
    """Each task's worth: the cheapest share of a node it could take, counted in its
    bottleneck dimension (price x max(cpu share, ram share)), over the shapes that hold it.

    Unlike the LP's flat prices, this sees that a task too big or too memory-hungry
    for the cheap shapes can only be hosted by dearer ones."""
    menu = menu_of(shapes)
    memo: dict[tuple[int, int, bool, str | None], float] = {}
    # a shape no cheaper and no bigger in either dimension than another that holds the task never gives
    # the minimum, so each set of holding shapes is cut to the ones no other beats on all three
    frontiers: dict[int, list[tuple[float, int, int]]] = {}  # by id of the menu's own tuple
    out: dict[str, float] = {}
    for t in tasks:
        key = (t.vcpus, t.ram_mib, t.preempt.preemptible, t.instance_type)
        v = memo.get(key)
        if v is None:
            held = menu.holding(t)
            frontier = frontiers.get(id(held))
            if frontier is None:
                frontier = frontiers[id(held)] = _undominated(held)
            v = math.inf
            for usd, cpu, ram in frontier:
                share = t.vcpus / cpu
                ram_share = t.ram_mib / ram
                if ram_share > share:
                    share = ram_share
                if usd * share < v:
                    v = usd * share
            memo[key] = v
        out[t.id] = v
    return out


def _undominated(shapes: Sequence[NodeShape]) -> list[tuple[float, int, int]]:
    """(price, vCPUs, MiB) of the shapes that no other of `shapes` matches or beats on all three."""
    kept: list[tuple[float, int, int]] = []
    # cheapest first (the bigger first at one price): only a shape already kept can beat a later one
    for s in sorted(shapes, key=lambda s: (s.usd_per_hour, -s.usable.vcpus, -s.usable.ram_mib)):
        cpu, ram = s.usable.vcpus, s.usable.ram_mib
        if not any(c >= cpu and r >= ram for _, c, r in kept):
            kept.append((s.usd_per_hour, cpu, ram))
    return kept


def dual_values(tasks: Sequence[TaskSpec], prices: Prices) -> dict[str, float]:
    """Each task's worth at the LP's dual prices."""
    return {t.id: task_value(t, prices) for t in tasks}


def lookahead_chooser(shapes: Shapes, values: dict[str, float], head: int, spread: int):
    """Pick a new node's shape by filling it, on paper, with the task and a sample of
    the tasks still to come (the next `head` in line and `spread` drawn evenly from the
    rest, so the small tasks that fill gaps are seen too); the shape buying the most
    value per dollar wins.  `ordered` is expected in decreasing value, so the window
    is filled largest first, and not to change while one list is being packed (the
    chooser keeps its values as lists, rebuilt when it is handed another list)."""
    menu = menu_of(shapes)
    line = _Line(values)

    def choose(task: TaskSpec, i: int, ordered: Sequence[TaskSpec]) -> NodeShape:
        line.follow(ordered)
        start = i + 1
        near = slice(start, start + head)
        window = list(ordered[near])
        own = values[task.id]
        # Two bounds on what a shape can buy, so that most shapes are never filled on paper:
        # - the task and its whole window; shapes come cheapest first, so once that, per dollar, is
        #   below the best found, no dearer shape can win;
        # - the room a shape has left, times the window's best value per vCPU (per MiB): more cannot fit.
        # Both are loosened by a hair, so a shape that could tie is still filled (the choice is exact).
        whole = own + sum(line.values[near])
        per_vcpu = max(line.per_vcpu[near], default=0.0)
        per_mib = max(line.per_mib[near], default=0.0)
        rest = len(ordered) - start  # (no copy of the rest: this runs once per node opened)
        if spread and rest > head:
            step = max(1, (rest - head) // spread)
            far = slice(start + head, start + head + step * spread, step)
            window += ordered[far]
            whole += sum(line.values[far])
            per_vcpu = max(per_vcpu, max(line.per_vcpu[far]))
            per_mib = max(per_mib, max(line.per_mib[far]))
        whole *= 1 + 1e-9
        best: NodeShape | None = None
        best_per_usd = best_usd = 0.0
        for s, cap_vcpus, cap_ram_mib, usd, spot, name in line.rows(menu.holding(task)):
            if best is not None and whole < best_per_usd * usd:
                break
            fc = cap_vcpus - task.vcpus
            fr = cap_ram_mib - task.ram_mib
            if best is not None and (own + min(per_vcpu * fc, per_mib * fr)) * (1 + 1e-9) < best_per_usd * usd:
                continue
            got = own
            for t in window:
                if t.vcpus <= fc and t.ram_mib <= fr and not (spot and t.preempt.max_preemptions == 0) \
                        and type_allowed(t.instance_type, name):
                    fc -= t.vcpus
                    fr -= t.ram_mib
                    got += values[t.id]
                    if fc == 0:
                        break
            per_usd = got / usd  # the most value per dollar wins; at a tie, the cheaper shape
            if best is None or per_usd > best_per_usd or (per_usd == best_per_usd and usd < best_usd):
                best, best_per_usd, best_usd = s, per_usd, usd
        if best is None:
            raise unplaceable(task, menu.shapes)
        return best
    return choose


class _Line:
    """The order being packed, as lists a look-ahead window reads by slices: each task's value,
    and its value per vCPU and per MiB (infinite for a task asking for none); and the shapes as
    plain rows (the chooser runs once per node opened, thousands of times for a big plan)."""

    def __init__(self, values: dict[str, float]):
        self._by_id = values
        self._order: Sequence[TaskSpec] | None = None
        self.values: list[float] = []
        self.per_vcpu: list[float] = []
        self.per_mib: list[float] = []
        self._rows: dict[int, tuple[tuple[NodeShape, int, int, float, bool, str], ...]] = {}

    def rows(self, shapes: tuple[NodeShape, ...]) -> tuple[tuple[NodeShape, int, int, float, bool, str], ...]:
        """(shape, usable vCPUs, usable MiB, $/h, spot, type name) of each of a menu's tuples of shapes."""
        found = self._rows.get(id(shapes))
        if found is None:
            found = self._rows[id(shapes)] = tuple(
                (s, s.usable.vcpus, s.usable.ram_mib, s.usd_per_hour, not s.reliable, s.name) for s in shapes)
        return found

    def follow(self, order: Sequence[TaskSpec]) -> None:
        if order is self._order:
            return
        self._order = order
        self.values = [self._by_id[t.id] for t in order]
        self.per_vcpu = [v / t.vcpus if t.vcpus > 0 else math.inf for t, v in zip(order, self.values)]
        self.per_mib = [v / t.ram_mib if t.ram_mib > 0 else math.inf for t, v in zip(order, self.values)]
