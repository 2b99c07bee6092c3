"""The plasticity manager's sizing decision: which nodes, of which types, on which market.

Strategies (all pack with the same rules, see packing.py; their orders and shape choosers
are in choosers.py):
- `seeds`: the multi-instance scheduling algorithm of seeds 000/001 with the
  paper's ordering: reliable tasks first, then jobs by the price of the
  cheapest instance each needs, largest first; every job onto the tightest
  open instance; when none fits, one new instance of the cheapest type that
  holds the first unplaced job.  Kept as the reference and as a candidate.
- `lookahead`: the same ordering by the LP's dual value; a new node's shape is
  the one that, filled with the task and the next tasks in line, buys the most
  dual value per dollar.  Spot prices are not linear in size, so this is what
  finds the cheap way to host many tasks rather than one.
Both are followed by the same improvement: empty the least useful nodes into
the free room of the others, then give every node the cheapest shape that
still holds its tasks.  The cheapest result wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from plastic.core.errors import PlanningError
from plastic.core.model import Market, NodeShape, TaskSpec
from plastic.core.planning.choosers import (
    bottleneck_values,
    dual_values,
    lookahead_chooser,
    seeds_chooser,
    seeds_order,
    task_value,
)
from plastic.core.planning.lower_bound import LowerBound, Prices, lower_bound
from plastic.core.planning.packing import (
    OpenNode,
    OpenNodes,
    PackedNode,
    Shapes,
    allowed_on,
    menu_of,
    pack_open,
)


@dataclass(frozen=True, slots=True)
class Solution:
    nodes: tuple[PackedNode, ...]
    strategy: str
    bound: LowerBound

    @property
    def usd_per_hour(self) -> float:
        return sum(n.shape.usd_per_hour for n in self.nodes)


def check_placeable(tasks: Sequence[TaskSpec], shapes: Shapes) -> None:
    """Raise UnplaceableTaskError for the first task no shape can hold."""
    menu = menu_of(shapes)
    for t in tasks:
        menu.cheapest(t)


# ---------------------------------------------------------------- improvement

def right_size(nodes: Sequence[PackedNode | OpenNode], shapes: Shapes) -> list[PackedNode]:
    """Give every node the cheapest shape that still holds its tasks."""
    menu = menu_of(shapes)
    return [PackedNode(menu.cheapest_for(n), tuple(n.tasks)) for n in nodes]


def consolidate(index: OpenNodes, prices: Prices, max_attempts: int) -> list[OpenNode]:
    """Try to empty the least useful of the open nodes into the free room of the others (in place);
    the nodes left with tasks, in their order."""
    if len(index.nodes) < 2:
        return [n for n in index.nodes if n.tasks]

    def usefulness(n: OpenNode) -> float:
        # dual value hosted per dollar: low means the node is a poor buy
        return sum(task_value(t, prices) for t in n.tasks) / n.shape.usd_per_hour

    removed: set[int] = set()
    for victim in sorted(index.nodes, key=usefulness)[:max_attempts]:
        if victim.pinned_type is not None:
            continue
        index.hide(victim)
        moves: list[tuple[OpenNode, TaskSpec]] = []
        for t in sorted(victim.tasks, key=lambda t: (-t.vcpus, -t.ram_mib, t.id)):
            target = index.tightest(t, prices, exclude=victim)
            if target is None:
                break
            index.put(target, t)
            moves.append((target, t))
        else:
            removed.add(victim.seq)
            continue
        for target, t in reversed(moves):  # undo
            index.take(target, t)
        index.show(victim)
    return [n for n in index.nodes if n.seq not in removed and n.tasks]


def improve_by_moves(nodes: Sequence[PackedNode], shapes: Shapes, max_rounds: int = 4) -> list[PackedNode]:
    """Local search for small plans: move one task to another node when, after giving
    both nodes their cheapest shapes, the plan costs less (a node left empty goes)."""
    menu = menu_of(shapes)
    current = [n for n in nodes]
    for _ in range(max_rounds):
        improved = False
        for a in range(len(current)):
            node_a = current[a]
            for t in node_a.tasks:
                if t.instance_type is not None:
                    continue
                rest = tuple(x for x in node_a.tasks if x is not t)
                new_a = PackedNode(node_a.shape, rest)
                price_a = menu.cheapest_for(new_a).usd_per_hour if rest else 0.0
                best_gain, best_b, best_shape_b = 1e-9, None, None
                for b, node_b in enumerate(current):
                    if b == a or not allowed_on(t, node_b.shape):
                        continue
                    grown = PackedNode(node_b.shape, node_b.tasks + (t,))
                    shape_b = grown.shape if grown.may_use(grown.shape) else None
                    if shape_b is None:
                        # the node must grow: the cheapest shape that holds it all
                        shape_b = next((s for s in menu.shapes if grown.may_use(s)), None)
                        if shape_b is None:
                            continue
                    else:
                        shape_b = menu.cheapest_for(grown)
                    gain = node_a.shape.usd_per_hour + node_b.shape.usd_per_hour - price_a - shape_b.usd_per_hour
                    if gain > best_gain:
                        best_gain, best_b, best_shape_b = gain, b, shape_b
                if best_b is not None:
                    node_b = current[best_b]
                    current[best_b] = PackedNode(best_shape_b, node_b.tasks + (t,))
                    current[a] = PackedNode(menu.cheapest_for(new_a), rest) if rest else PackedNode(node_a.shape, ())
                    node_a = current[a]
                    improved = True
            current = [n for n in current if n.tasks] if any(not n.tasks for n in current) else current
            if a >= len(current) - 1:
                break
        if not improved:
            break
    return [n for n in current if n.tasks]


def _covers(node: PackedNode, t: TaskSpec) -> bool:
    """Can this on-demand node run `t` once `t` has escalated (when its tasks are done)?"""
    return node.shape.reliable and node.shape.usable.holds(t.demand) and allowed_on(t, node.shape)


def _cheapest_reliable_fix(nodes: Sequence[PackedNode], od_shapes: Sequence[NodeShape], need: TaskSpec | None,
                           keep: Sequence[TaskSpec]) -> tuple[int | None, NodeShape] | None:
    """The cheapest way to get an on-demand node able to run `need` (any on-demand node
    when None): turn node i into shape s, or (i is None) add a node of shape s.  A
    change must leave every task of `keep` still covered by some on-demand node."""
    best: tuple[float, int | None, NodeShape] | None = None
    for s in od_shapes:
        if need is not None and not (s.usable.holds(need.demand) and allowed_on(need, s)):
            continue
        if best is None or s.usd_per_hour < best[0]:
            best = (s.usd_per_hour, None, s)
        for i, n in enumerate(nodes):
            delta = s.usd_per_hour - n.shape.usd_per_hour
            if delta >= best[0] or not n.may_use(s):
                continue
            if n.shape.reliable and keep:
                trial = PackedNode(s, n.tasks)
                if any(_covers(n, k) and not _covers(trial, k)
                       and not any(_covers(m, k) for j, m in enumerate(nodes) if j != i) for k in keep):
                    continue
            best = (delta, i, s)
    return None if best is None else (best[1], best[2])


def ensure_reliable_capacity(nodes: Sequence[PackedNode], shapes: Sequence[NodeShape],
                             tasks: Sequence[TaskSpec]) -> list[PackedNode]:
    """The paper's guarantee: at least one on-demand node, and for every task that
    escalates after N preemptions (preempt=N) an on-demand node able to hold it."""
    nodes = list(nodes)
    od_shapes = [s for s in shapes if s.reliable]
    needs: dict[tuple[int, int, str | None], TaskSpec] = {}
    for t in tasks:
        if t.preempt.max_preemptions not in (None, 0):
            needs.setdefault((t.vcpus, t.ram_mib, t.instance_type), t)
    covered: list[TaskSpec] = []
    for t in sorted(needs.values(), key=lambda t: (-t.vcpus, -t.ram_mib, t.id)):
        if not any(_covers(n, t) for n in nodes):
            fix = _cheapest_reliable_fix(nodes, od_shapes, t, covered)
            if fix is None:
                raise PlanningError(f"no on-demand instance type can hold task {t.id} once it escalates",
                                    source=t.id, field="preempt", binding_constraint="reliable capacity")
            nodes = _apply_fix(nodes, fix)
        covered.append(t)
    if not any(n.shape.reliable for n in nodes):
        fix = _cheapest_reliable_fix(nodes, od_shapes, None, covered)
        if fix is None:
            raise PlanningError("the catalog has no on-demand type for the reliable node",
                                binding_constraint="reliable capacity")
        nodes = _apply_fix(nodes, fix)
    return nodes


def _apply_fix(nodes: list[PackedNode], fix: tuple[int | None, NodeShape]) -> list[PackedNode]:
    i, s = fix
    if i is None:
        return nodes + [PackedNode(s, ())]
    return nodes[:i] + [PackedNode(s, nodes[i].tasks)] + nodes[i + 1:]


# ---------------------------------------------------------------- solving

MOVES_MAX_TASKS = 300  # the move search is quadratic: small plans only

# (name, valuation, window head, window spread); the first ones are kept for big inputs.
VARIANTS = (
    ("bottleneck-16+64", "bottleneck", 16, 64),
    ("dual-8+128", "dual", 8, 128),
    ("dual-0+64", "dual", 0, 64),
    ("bottleneck-8+32", "bottleneck", 8, 32),
    ("dual-16+64", "dual", 16, 64),
    ("dual-48", "dual", 48, 0),
)


SMALL_PLAN_TASKS = 100  # up to this many tasks, a wide grid of look-ahead windows is cheap


def variants_for(n_tasks: int) -> tuple[tuple[str, str, int, int], ...]:
    """The look-ahead variants worth their time for a plan of `n_tasks` tasks."""
    if n_tasks > 3000:
        return VARIANTS[:2]
    if n_tasks > SMALL_PLAN_TASKS:
        return VARIANTS
    return tuple((f"{valuation}-{head}+{spread}", valuation, head, spread)
                 for valuation in ("bottleneck", "dual") for head in (0, 2, 4, 8, 16, 32, 64)
                 for spread in (0, 8, 16, 32, 64))


T = TypeVar("T")
R = TypeVar("R")
# How solve runs its strategies: `run_each(attempt, strategies)` returns attempt(s) for each, in order.
# The strategies do not share state, so a caller may run them at the same time (see plastic.parallel).
RunEach = Callable[[Callable[[T], R], Sequence[T]], list[R]]


def one_by_one(attempt: Callable[[T], R], items: Sequence[T]) -> list[R]:
    return [attempt(x) for x in items]


# A strategy's packing in plain numbers: (index of the shape in the menu, indices of its tasks) a node.
Packing = tuple[tuple[int, tuple[int, ...]], ...]


def solve(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], *, effort: int = 2,
          bound: LowerBound | None = None, run_each: RunEach = one_by_one) -> Solution:
    """Pack every task at once; the cheapest of the strategies tried.

    effort 1 runs the seeds' algorithm alone; effort 2 adds the look-ahead
    variants (all of them up to 3,000 tasks; beyond, the first two without the seeds').
    Each strategy is packed, consolidated and right-sized on its own (by `run_each`)."""
    menu = menu_of(shapes)
    shapes = menu.shapes
    check_placeable(tasks, menu)
    bound = bound or lower_bound(tasks, shapes)
    prices = bound.prices
    strategies: list[tuple[str, str, int, int]] = []
    if effort < 2 or len(tasks) <= 3000:  # beyond that the look-ahead always wins: save the time
        strategies.append(("seeds", "seeds", 0, 0))
    if effort >= 2:
        strategies += variants_for(len(tasks))
    valuations: dict[str, dict[str, float]] = {}
    orders: dict[str, list[TaskSpec]] = {}

    def attempt(strategy: tuple[str, str, int, int]) -> Packing:
        _, valuation, head, spread = strategy
        if valuation == "seeds":
            ordered, chooser = seeds_order(tasks, menu), seeds_chooser(menu)
        else:
            values = valuations.get(valuation)
            if values is None:
                values = valuations[valuation] = dual_values(tasks, prices) if valuation == "dual" \
                    else bottleneck_values(tasks, menu)
            ordered = orders.get(valuation)
            if ordered is None:
                ordered = orders[valuation] = sorted(tasks, key=lambda t: (
                    t.preempt.preemptible, t.instance_type is None, -values[t.id], -t.vcpus, -t.ram_mib, t.id))
            chooser = lookahead_chooser(menu, values, head, spread)
        index = pack_open(ordered, shapes, prices, chooser)
        opened = [n for n in index.nodes if n.tasks]
        if effort >= 2:
            opened = consolidate(index, prices, len(opened) if len(opened) <= 2000 else 200)
        return _numbered(ensure_reliable_capacity(right_size(opened, menu), shapes, tasks), shapes, tasks)

    packings = run_each(attempt, strategies)
    # the cheapest first (stable: the earlier strategy wins ties); only those looked at again are rebuilt
    ranked = sorted(zip(strategies, packings, strict=True), key=lambda sp: sum(shapes[s].usd_per_hour
                                                                              for s, _ in sp[1]))
    results = [Solution(tuple(PackedNode(shapes[s], tuple(tasks[i] for i in held)) for s, held in packing),
                        name, bound)
               for (name, *_), packing in ranked[:8 if effort >= 2 and len(tasks) <= SMALL_PLAN_TASKS else 1]]
    best = results[0]
    if effort >= 2 and len(tasks) <= MOVES_MAX_TASKS:
        for sol in results:
            moved = ensure_reliable_capacity(improve_by_moves(sol.nodes, menu), shapes, tasks)
            if sum(n.shape.usd_per_hour for n in moved) < best.usd_per_hour - 1e-9:
                best = Solution(tuple(moved), sol.strategy + "+moves", bound)
    return best


def _numbered(nodes: Sequence[PackedNode], shapes: Sequence[NodeShape], tasks: Sequence[TaskSpec]) -> Packing:
    shape_at = {id(s): i for i, s in enumerate(shapes)}
    task_at = {id(t): i for i, t in enumerate(tasks)}
    return tuple((shape_at[id(n.shape)], tuple(task_at[id(t)] for t in n.tasks)) for n in nodes)


def sort_nodes(nodes: Sequence[PackedNode]) -> list[PackedNode]:
    """A stable presentation order: on-demand first, then by type size and price."""
    # a task is on one node only, so nodes of one shape differ at their first task's id (an empty node
    # first): the same order as by their whole tuples of ids, without building them
    return sorted(nodes, key=lambda n: (n.shape.market is Market.SPOT, -n.shape.usable.vcpus,
                                        -n.shape.usable.ram_mib, n.shape.name,
                                        n.tasks[0].id if n.tasks else ""))
