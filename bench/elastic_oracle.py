"""bench/elastic_oracle.py: what a schedule that knows more than the controller could pay, beside the target.

    python bench/elastic_oracle.py                          # montage, the trace whose target is missed
    python bench/elastic_oracle.py --traces 'blast*' --iterations 200 --permutations 30

The floor (plastic.core.account.floor) is a bound no policy goes below; the issue's target is
floor + 0.5 x (static - floor).  Where the elastic controller misses it, this asks how low a schedule
can go at all, by searching one family of feasible schedules (calm, full scale, the simulation's
rules: boot 60 s, a node paid from its creation for 60 s at least, one on-demand node from the start
to the end, the makespan within 1.1 x static's):

- every node is bought at time 0; each task of the first wave (the tasks without parents) is placed on
  a node, and runs from the boot on; every later task is list-scheduled (ready first, then the longest
  path to the end first) on the vCPU where it starts earliest;
- a spot node is released when its last task ends; a *drained* node takes a later task only if the
  task ends before the node's first-wave tasks do (within the time it is paid for anyway);
- searched: which spot nodes are bought (multisets of the cheapest shapes per vCPU, enough vCPUs for
  the first wave at once), which of them are drained, and where each first-wave task goes (swaps).

Two answers per trace, as fractions of static's cost:

- **known runtimes**: the cheapest schedule found when the search knows every task's runtime.  It is a
  schedule, so the optimum is at most this;
- **blind**: the least *expected* cost found for a first-wave placement made without knowing which of
  a step's tasks runs longest, the runtimes of each step's first-wave tasks permuted among them
  (`--permutations` draws; the node set, drain and placement are chosen on one set of draws and their
  cost is the mean over another, of `--judged` draws), the drain and the list scheduling still
  perfectly timed.  A controller that does not know each task's runtime (plastic's does not: within a
  step every task has the same spread) cannot expect less from schedules of this family.

A search, not a proof: a lower figure may exist outside the family.  RAM is not checked (the traces'
tasks ask for little) and interruptions are left out.
"""

from __future__ import annotations

import argparse
import fnmatch
import heapq
import itertools
import math
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import WFINSTANCES, machine  # noqa: E402
from bench.elastic import AVOIDABLE_SHARE, TARGET_MAKESPAN_RATIO  # noqa: E402
from bench.elastic_bound import MIN_BILLED_S, runtime_s, usd_lower_bound  # noqa: E402
from bench.elastic_sim import simulate  # noqa: E402
from bench.sim_world import trace_step  # noqa: E402
from plastic.catalogs import load_catalog  # noqa: E402
from plastic.core.model import Market, NodeShape, TaskSpec, node_shapes  # noqa: E402
from plastic.core.planning.sizing import plan_workload  # noqa: E402
from plastic.core.planning.waves import topological_order  # noqa: E402
from plastic.traces import load_trace  # noqa: E402

BOOT_S = 60.0
SPOT_SHAPES = 4  # the cheapest spot shapes per vCPU the node sets are made of
EXTRA_VCPUS = 4  # node sets with up to this many spot vCPUs beyond the first wave's need
MORE_NODES = 3  # and up to this many nodes more than the fewest that could hold it


class Schedules:
    """The family of schedules of one trace (the module docstring) and their cost."""

    def __init__(self, tasks: Sequence[TaskSpec], cap_s: float):
        self.cap_s = cap_s
        self.ids = [t.id for t in tasks]
        self.vcpus = {t.id: t.vcpus for t in tasks}
        self.parents = {t.id: tuple(t.parents) for t in tasks}
        self.children: dict[str, list[str]] = {i: [] for i in self.ids}
        for t in tasks:
            for p in t.parents:
                self.children[p].append(t.id)
        self.roots = [t.id for t in tasks if not t.parents]
        self.runtime = {t.id: runtime_s(t) for t in tasks}
        self.order = [t.id for t in topological_order(tasks)]
        self.to_end = self._paths_to_end()

    def _paths_to_end(self) -> dict[str, float]:
        """Each task's longest path to the end, itself included, with the runtimes of `self.runtime`."""
        out: dict[str, float] = {}
        for tid in reversed(self.order):
            out[tid] = self.runtime[tid] + max((out[c] for c in self.children[tid]), default=0.0)
        return out

    def with_runtimes(self, runtime: dict[str, float]) -> Schedules:
        """The same DAG with other runtimes (a permutation within steps)."""
        other = object.__new__(Schedules)
        other.__dict__.update(self.__dict__)
        other.runtime = runtime
        other.to_end = other._paths_to_end()
        return other

    def cost(self, nodes: Sequence[NodeShape], first: dict[str, int], drained: frozenset[int]) -> tuple[float, float]:
        """(USD, makespan) of the schedule: first-wave task -> node index, the drained nodes' indexes."""
        free = [[BOOT_S] * n.usable.vcpus for n in nodes]
        end: dict[str, float] = {}
        last = [0.0] * len(nodes)
        for tid in sorted(self.roots, key=lambda r: -self.runtime[r]):
            slots = free[first[tid]]
            k = min(range(len(slots)), key=slots.__getitem__)
            end[tid] = slots[k] = slots[k] + self.runtime[tid]
            last[first[tid]] = max(last[first[tid]], end[tid])
        paid_anyway = list(last)
        waiting = {i: len(self.parents[i]) for i in self.ids}
        ready: list[tuple[float, float, str]] = []
        for tid in self.roots:
            self._release_children(tid, end, waiting, ready)
        while ready:
            at, _, tid = heapq.heappop(ready)
            ni, start = self._earliest(nodes, free, drained, paid_anyway, tid, at)
            end[tid] = start + self.runtime[tid]
            slots = sorted(range(nodes[ni].usable.vcpus), key=free[ni].__getitem__)[:self.vcpus[tid]]
            for k in slots:
                free[ni][k] = end[tid]
            last[ni] = max(last[ni], end[tid])
            self._release_children(tid, end, waiting, ready)
        makespan = max(end.values())
        usd = sum(n.usd_per_hour * (makespan if n.reliable else max(last[i], MIN_BILLED_S)) / 3600.0
                  for i, n in enumerate(nodes) if n.reliable or last[i] > 0)
        return usd, makespan

    def _release_children(self, tid, end, waiting, ready) -> None:
        for c in self.children[tid]:
            waiting[c] -= 1
            if not waiting[c]:
                heapq.heappush(ready, (max(end[p] for p in self.parents[c]), -self.to_end[c], c))

    def _earliest(self, nodes, free, drained, paid_anyway, tid, ready_at) -> tuple[int, float]:
        """The node where `tid` starts earliest (a tie: the one it lengthens least, then the reliable one)."""
        best: tuple[tuple[float, float, int], int, float] | None = None
        for ni, node in enumerate(nodes):
            if node.usable.vcpus < self.vcpus[tid]:
                continue
            start = max(ready_at, sorted(free[ni])[self.vcpus[tid] - 1])
            ends = start + self.runtime[tid]
            if ni in drained and ends > paid_anyway[ni]:
                continue
            longer = 0.0 if node.reliable else max(0.0, ends - paid_anyway[ni]) * node.usd_per_hour
            key = (start, longer, 0 if node.reliable else 1)
            if best is None or key < best[0]:
                best = (key, ni, start)
        if best is None:
            raise ValueError(f"task {tid} fits no node of the set")
        return best[1], best[2]


def node_sets(shapes: Sequence[NodeShape], width_vcpus: int) -> list[tuple[NodeShape, ...]]:
    """The cheapest on-demand shape an hour as the reliable node, then every multiset of the cheapest
    spot shapes with enough vCPUs for the first wave at once (up to EXTRA_VCPUS more)."""
    on_demand = min((s for s in shapes if s.market is Market.ON_DEMAND),
                    key=lambda s: (s.usd_per_hour, -s.usable.vcpus))
    spot = sorted((s for s in shapes if s.market is Market.SPOT), key=lambda s: s.usd_per_hour / s.usable.vcpus)
    spot = spot[:SPOT_SHAPES]
    need = max(width_vcpus - on_demand.usable.vcpus, 0)
    most = math.ceil(need / max((s.usable.vcpus for s in spot), default=1)) + MORE_NODES
    out = []
    for count in range(0, most + 1):
        for combo in itertools.combinations_with_replacement(spot, count):
            if need <= sum(s.usable.vcpus for s in combo) <= need + EXTRA_VCPUS:
                out.append((on_demand, *combo))
    return out


def first_placement(schedules: Schedules, nodes: Sequence[NodeShape]) -> dict[str, int] | None:
    """Shortest first-wave tasks on the biggest nodes, one vCPU each in turn (None: the wave does not fit)."""
    biggest_first = sorted(enumerate(nodes), key=lambda x: -x[1].usable.vcpus)
    slots = [i for i, n in biggest_first for _ in range(n.usable.vcpus)]
    roots = sorted(schedules.roots, key=lambda r: schedules.runtime[r])
    need = sum(schedules.vcpus[r] for r in roots)
    if need > len(slots) or any(schedules.vcpus[r] > max(n.usable.vcpus for n in nodes) for r in roots):
        return None
    placement, used = {}, [0] * len(nodes)
    for tid in roots:
        ni = next((i for i in slots if used[i] + schedules.vcpus[tid] <= nodes[i].usable.vcpus), None)
        if ni is None:
            return None
        placement[tid] = ni
        used[ni] += schedules.vcpus[tid]
    return placement


def fits(schedules: Schedules, nodes: Sequence[NodeShape], placement: dict[str, int]) -> bool:
    used = [0] * len(nodes)
    for tid, ni in placement.items():
        used[ni] += schedules.vcpus[tid]
    return all(u <= n.usable.vcpus for u, n in zip(used, nodes))


def improve(score, placement: dict[str, int], nodes, schedules: Schedules, iterations: int, rng: random.Random):
    """Swap first-wave tasks between nodes while the score (USD or expected USD; inf if over the cap) does
    not grow; (score, placement)."""
    best = score(placement)
    roots = schedules.roots
    for _ in range(iterations if len(roots) > 1 else 0):
        a, b = rng.sample(roots, 2)
        if placement[a] == placement[b]:
            continue
        trial = dict(placement)
        trial[a], trial[b] = trial[b], trial[a]
        if not fits(schedules, nodes, trial):
            continue
        value = score(trial)
        if value <= best:
            best, placement = value, trial
    return best, placement


def permutations(schedules: Schedules, draws: int, rng: random.Random) -> list[Schedules]:
    """The trace with its first-wave runtimes permuted within each step, `draws` times."""
    by_step: dict[str, list[str]] = {}
    for tid in schedules.roots:
        by_step.setdefault(trace_step(tid), []).append(tid)
    out = []
    for _ in range(draws):
        runtime = dict(schedules.runtime)
        for ids in by_step.values():
            values = [schedules.runtime[i] for i in ids]
            rng.shuffle(values)
            runtime.update(zip(ids, values))
        out.append(schedules.with_runtimes(runtime))
    return out


def search(schedules: Schedules, shapes: Sequence[NodeShape], iterations: int, draws: int, seed: int = 1,
           judged_draws: int | None = None) -> dict:
    """The cheapest schedule found with known runtimes and the least expected cost found blind (USD);
    each with its node set and drained nodes."""
    rng = random.Random(seed)
    worlds = permutations(schedules, draws, rng)
    fresh = permutations(schedules, judged_draws or draws, rng)  # the blind choice is judged on other draws
    width = sum(schedules.vcpus[r] for r in schedules.roots)
    known: tuple[float, str] = (math.inf, "")
    blind: tuple[float, list[float], str] = (math.inf, [], "")  # chosen on `worlds`, judged on `fresh`
    for nodes in node_sets(shapes, width):
        start = first_placement(schedules, nodes)
        if start is None:
            continue
        spot = range(1, len(nodes))
        for drained in itertools.chain.from_iterable(itertools.combinations(spot, k) for k in range(len(nodes))):
            drained = frozenset(drained)

            def usd(placement, world=schedules):
                cost, makespan = world.cost(nodes, placement, drained)
                return cost if makespan <= schedules.cap_s * (1 + 1e-9) else math.inf

            def expected(placement, sample=worlds):
                return sum(usd(placement, w) for w in sample) / len(sample)

            what = describe(nodes, drained)
            value, _ = improve(usd, start, nodes, schedules, iterations, rng)
            known = min(known, (value, what))
            value, placement = improve(expected, start, nodes, schedules, iterations // 4, rng)
            if value < blind[0]:
                blind = (value, [usd(placement, w) for w in fresh], what)
    judged = blind[1] or [math.inf]
    finite = all(math.isfinite(v) for v in judged)  # a draw over the cap: no standard error to give
    spread = statistics.stdev(judged) / math.sqrt(len(judged)) if finite and len(judged) > 1 else math.inf
    return {"known_usd": known[0], "known_nodes": known[1], "blind_usd": statistics.fmean(judged),
            "blind_error_usd": spread, "blind_nodes": blind[2]}


def describe(nodes: Sequence[NodeShape], drained: frozenset[int]) -> str:
    words = []
    for i, n in enumerate(nodes):
        market = "on-demand" if n.reliable else "spot"
        words.append(f"{n.name} {market}{' drained' if i in drained else ''}")
    return ", ".join(words)


def run_trace(path: Path, iterations: int, draws: int, judged_draws: int | None = None) -> dict:
    workload = load_trace(str(path))
    catalog = load_catalog(None)
    shapes = node_shapes(catalog)
    static = simulate(workload.tasks, plan_workload(workload, catalog), shapes, "static", seed=1,
                      rate_per_hour=0.0, boot_s=BOOT_S)
    cap_s = TARGET_MAKESPAN_RATIO * static.makespan_s
    floor = usd_lower_bound(workload.tasks, shapes, cap_s, boot_s=BOOT_S)
    found = search(Schedules(workload.tasks, cap_s), shapes, iterations, draws, judged_draws=judged_draws)
    target = floor + AVOIDABLE_SHARE * (static.usd - floor)
    return {"trace": path.name, "static_usd": static.usd, "cap_s": cap_s, "floor": floor / static.usd,
            "target": target / static.usd, "known": found["known_usd"] / static.usd,
            "known_nodes": found["known_nodes"], "blind": found["blind_usd"] / static.usd,
            "blind_error": found["blind_error_usd"] / static.usd,
            "blind_nodes": found["blind_nodes"]}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", default="montage*", help="glob over data/wfinstances (default: montage*)")
    ap.add_argument("--iterations", type=int, default=400,
                    help="swaps tried per node set and drain (default 400; a quarter of them for the blind figure)")
    ap.add_argument("--permutations", type=int, default=40, help="runtime draws for the blind figure (default 40)")
    ap.add_argument("--judged", type=int, help="fresh draws the blind choice is judged on (default: --permutations)")
    args = ap.parse_args(argv)
    checks = (("--iterations", args.iterations, 0), ("--permutations", args.permutations, 1),
              ("--judged", args.permutations if args.judged is None else args.judged, 2))
    for flag, value, least in checks:
        if value < least:
            print(f"elastic_oracle: {flag} must be >= {least}, not {value}", file=sys.stderr)
            return 2
    paths = sorted(p for p in WFINSTANCES.glob("*.json") if fnmatch.fnmatch(p.name, args.traces))
    if not paths:
        print(f"elastic_oracle: no trace of {WFINSTANCES} matches {args.traces!r}", file=sys.stderr)
        return 2
    judged = args.judged or args.permutations
    print(f"schedules that know more than the controller; {machine()}; boot {BOOT_S:g} s, calm, "
          f"{args.iterations} swaps, {args.permutations} runtime draws (judged on {judged} others); USD over static's")
    print("| trace | floor | target | known runtimes | its nodes | blind (expected, +- standard error) | its nodes |")
    print("|---|--:|--:|--:|---|--:|---|")
    for path in paths:
        row = run_trace(path, args.iterations, args.permutations, args.judged)
        print(f"| {row['trace']} | {row['floor']:.4f} | {row['target']:.4f} | {row['known']:.4f} | "
              f"{row['known_nodes']} | {row['blind']:.4f} +- {row['blind_error']:.4f} | {row['blind_nodes']} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
