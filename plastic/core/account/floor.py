"""The least any policy could pay for a set of tasks by a given makespan: the cost floor (pure).

`usd_lower_bound` takes the tasks (the vCPUs each asks for, its runtime, the DAG's parents), the node
shapes that can be bought (type, market, usable vCPUs, USD per hour) and a makespan cap, and gives a
cost that no policy running every task by the cap can go below.  `plastic report` sets a finished run's
cost beside it ("1.09 x the floor": how far the run was from what no policy could beat) and
bench/elastic.py tells with it when a target is out of reach by arithmetic alone.

The rules every policy is held to (those of bench/elastic_sim.py, and plastic's own):

- a node is paid for from its creation, its boot included, and for ``min_billed_s`` at least;
- there is no node before time 0, so no task starts before ``boot_s``;
- one on-demand (reliable) node is up from the start to the end: every plan plastic makes keeps one,
  and so does its elastic controller (``one_reliable_node=False`` drops this rule);
- the last task ends by ``cap_s``, at least ``boot_s`` plus the critical path (else: math.inf).

Everything else is relaxed (the DAG's order beyond its critical path, RAM, which task runs on which
node, whether a task fits a node whole), so the floor is a bound, not a plan.  It adds up costs that
no policy escapes:

- the window: every task runs between ``boot_s`` and ``cap_s``, a window of width W.  The vCPUs bought,
  V in all, must hold the work (vCPU-seconds) in it: V >= work / W.  A task longer than W / 2 covers
  the window's middle wherever it runs, so V also holds all such tasks at once;
- the reliable node: its price for the whole run (boot plus the critical path at least, and at least
  the minimum charge).  Its vCPUs take up to their share of the work (its vCPUs x W) at no further
  cost.  Every on-demand shape is tried as that node and the cheapest total counts;
- the boots: every other node bought pays its boot; and, up for W at most after it, it is billed at
  least max(boot + up, min_billed_s) >= up + max(boot_s, min_billed_s - W).  So the vCPUs V needs
  beyond the reliable node's cost the cheapest way to buy them (an unbounded knapsack over the shapes)
  times max(boot_s, min_billed_s - W);
- the busy time: the work the reliable node does not take, at the cheapest price per vCPU-second of
  any shape.

Work no policy may run on spot (`preempt: false`; a task allowed some preemptions may start there) is
held to on-demand capacity: the reliable node takes it first (any other order leaves more of it to
pay for); what it cannot take is paid at the cheapest on-demand price per vCPU-second, and the vCPUs
bought include at least the on-demand vCPUs that work needs by the same two rules (its work in the
window, its tasks across the middle at once), so the boots are the cheapest set of nodes with that
many on-demand vCPUs and the whole need in all.

A policy that replaces a reliable node it lost or released keeps no single node throughout (the
elastic controller and the reactive scaler do so in a few percent of random runs).  The floor is meant
to hold for it too: the replaced node's time can be traded for spot capacity, which costs less per vCPU
than on-demand in every catalog here.  That argument is not written out; the hypothesis property in
tests/test_bench_elastic.py checks the floor against simulated runs of every policy, replacements
included.

A run's floor (`run_floor`, what `plastic report` prints) is that bound with what a finished run knows:

- boot 0 s and no minimum charge: the report pays an agent by the second from the moment it joins the
  run, and the nodes a run starts with boot before its clock starts, unpaid.  A run's own
  ``--boot-seconds`` is no rule of its policy (its first nodes run tasks from its first second: a floor
  with that boot would be false of the run itself);
- the tasks that finished, each with the vCPUs it asked for and the wall time of its attempt that
  finished, all counted as preemptible (the records do not say which had to run on demand: a lower
  floor, still a floor).  The report does not know the DAG's parents: the longest task stands in for the critical
  path.  The critical path is at least that long and the floor only grows with it, as it does with every
  task's runtime and with every task added, so the stand-in, and any task the records leave out (a
  resumed run's adopted ones), give a lower floor, still a floor;
- the shapes: every type of the run's catalog on each market it sells, and the run's own agents as
  they were priced (their advertised vCPUs at their price: an agent priced below its catalog price, or
  with more vCPUs than its type, can only lower the floor);
- the cap: the run's makespan.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from plastic.core.model import PREEMPTIBLE, InstanceType, Market, NodeShape, Resources, TaskSpec

MIN_BILLED_S = 60.0  # bench/elastic_sim.py's minimum charge of a node
RUN_BOOT_S = 0.0  # a run's floor: its first nodes booted before its clock started, unpaid
RUN_MIN_BILLED_S = 0.0  # a run's report pays agents by the second
LONGEST_TASK = "longest task"  # a run's floor: what stands in for the critical path


def runtime_s(task: TaskSpec) -> float:
    """A task's runtime as the floor counts it (a trace's missing or zero runtime counts as 1 s, never
    less than 1 ms), as bench/elastic_sim.py runs it."""
    return max(task.runtime_s or 1.0, 0.001)


def critical_path_s(tasks: Sequence[TaskSpec]) -> float:
    """The longest chain of runtimes through the DAG (the longest task when no task has a parent)."""
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


def _cheapest_vcpus_table(shapes: Sequence[NodeShape], vcpus: int) -> list[float]:
    """For k = 0..vcpus: the least hourly price of nodes with at least k usable vCPUs in all."""
    best = [0.0] + [math.inf] * max(vcpus, 0)
    for k in range(1, vcpus + 1):
        best[k] = min((s.usd_per_hour + best[max(k - s.usable.vcpus, 0)] for s in shapes), default=math.inf)
    return best


def cheapest_vcpus_usd_per_hour(shapes: Sequence[NodeShape], vcpus: int) -> float:
    """The least hourly price of a set of nodes with at least `vcpus` usable vCPUs in all."""
    return 0.0 if vcpus <= 0 else _cheapest_vcpus_table(shapes, vcpus)[vcpus]


def usd_lower_bound(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape], cap_s: float, *, boot_s: float = 60.0,
                    min_billed_s: float = MIN_BILLED_S, one_reliable_node: bool = True) -> float:
    """No policy that keeps one reliable node alive (unless `one_reliable_node` is False) and finishes
    `tasks` by `cap_s` pays less (math.inf when `cap_s` is shorter than the boot plus the critical path,
    or no shape can be the reliable node, or reliable work has no on-demand shape to run on)."""
    end_s = boot_s + critical_path_s(tasks)
    if cap_s < end_s - 1e-9 * end_s:  # a run that ends at the critical path, summed in another order
        return math.inf
    cap_s = max(cap_s, end_s)
    window_s = cap_s - boot_s
    on_demand = [s for s in shapes if s.market is Market.ON_DEMAND]
    usd_per_vcpu_s = min((s.usd_per_hour / s.usable.vcpus for s in shapes), default=math.inf) / 3600.0
    on_demand_usd_per_vcpu_s = min((s.usd_per_hour / s.usable.vcpus for s in on_demand), default=math.inf) / 3600.0
    boot_charge_s = max(boot_s, min_billed_s - window_s)
    cores = ([(s.usd_per_hour * max(end_s, min_billed_s) / 3600.0, s.usable.vcpus) for s in on_demand]
             if one_reliable_node else [(0.0, 0)])
    # work no policy may run on spot: `preempt: false` (a task allowed some preemptions may start there)
    reliable = _Work.of([t for t in tasks if not t.preempt.preemptible], window_s)
    everything = _Work.of(tasks, window_s)
    needs = []  # per core: (vCPUs to buy, of which on demand, reliable work left, other work left)
    for _, vcpus in cores:
        rest = everything.beyond(vcpus, window_s)  # the core node takes the reliable work first
        rest_reliable = reliable.beyond(vcpus, window_s)
        needs.append((everything.vcpus_to_buy(vcpus, window_s), reliable.vcpus_to_buy(vcpus, window_s),
                      rest_reliable, rest - rest_reliable))
    most = max((n for n, _, _, _ in needs), default=0)
    # with no boot to pay the vCPUs bought cost nothing beyond their busy time: no knapsack to solve
    tables = ((_cheapest_vcpus_table(shapes, most), _cheapest_vcpus_table(on_demand, most))
              if boot_charge_s > 0 else None)
    best = math.inf
    for (core_usd, _), (need, need_on_demand, rest_reliable, rest_other) in zip(cores, needs):
        boots_usd = 0.0
        if tables is not None and need > 0:
            any_usd, on_demand_usd = tables
            boots_usd = min(on_demand_usd[k] + any_usd[need - k] for k in range(need_on_demand, need + 1))
            boots_usd *= boot_charge_s / 3600.0
        busy_usd = ((on_demand_usd_per_vcpu_s * rest_reliable if rest_reliable > 0 else 0.0)
                    + (usd_per_vcpu_s * rest_other if rest_other > 0 else 0.0))
        best = min(best, core_usd + boots_usd + busy_usd)
    return best


@dataclass(frozen=True, slots=True)
class _Work:
    """Work (vCPU-seconds) in the window, and the vCPUs of its tasks longer than half of it."""

    vcpu_s: float
    across_middle: int  # such a task runs across the window's middle wherever it runs

    @classmethod
    def of(cls, tasks: Sequence[TaskSpec], window_s: float) -> _Work:
        # a task of exactly half the window (a chain of two such halves, summed in another order) may not
        # cross its middle, so the test leaves the last bits of a float out
        return cls(sum(t.vcpus * runtime_s(t) for t in tasks),
                   sum(t.vcpus for t in tasks if runtime_s(t) > window_s / 2 * (1 + 1e-9)))

    def beyond(self, core_vcpus: int, window_s: float) -> float:
        """The work a core node of `core_vcpus` cannot take in the window."""
        return max(self.vcpu_s - core_vcpus * window_s, 0.0)

    def vcpus_to_buy(self, core_vcpus: int, window_s: float) -> int:
        """vCPUs beyond the core node's that must be bought: to hold the rest of the work in the window,
        and every task across the middle at once."""
        rest = self.beyond(core_vcpus, window_s)
        by_work = math.ceil(rest / window_s - 1e-9) if window_s > 0 and rest > 0 else 0
        return max(by_work, self.across_middle - core_vcpus, 0)


@dataclass(frozen=True, slots=True)
class RunFloor:
    """A run's floor (see the module docstring) and what it was computed with."""

    usd: float  # no policy pays less for these tasks by this makespan
    cost_over_floor: float | None  # the run's cost over the floor (None when the floor is 0)
    boot_s: float
    cap_s: float  # the run's makespan
    critical_path_s: float
    critical_path_from: str  # LONGEST_TASK: the report does not know the DAG's parents
    tasks: int  # the finished tasks counted (those whose vCPUs and runtime the records give)
    vcpu_s: float  # their work
    shapes: int  # the shapes the floor may buy: the catalog's on each market, and the run's agents
    one_reliable_node: bool  # the rule that one on-demand node is up throughout (False: the run had none)

    def sentence(self, cost_usd: float) -> str:
        """The floor in one line, as the text report and the HTML page say it."""
        who = "no policy that keeps an on-demand node" if self.one_reliable_node else "no policy"
        tasks = "this task" if self.tasks == 1 else f"these {self.tasks} tasks"
        why = (f"{who} pays less for {tasks} by this makespan; boot {self.boot_s:g} s, critical "
               f"path {self.critical_path_s:.1f} s from the {self.critical_path_from}, {self.shapes} node shapes")
        if self.cost_over_floor is None:  # a floor of 0: the run had a node it paid nothing for
            return f"cost {cost_usd:.6f} USD; the floor is {self.usd:.6f} USD ({why})"
        return f"cost {cost_usd:.6f} USD, {self.cost_over_floor:.2f} x the floor ({self.usd:.6f} USD: {why})"


def agent_shape(name: str, preemptible: bool, vcpus: int, ram_mib: int, usd_per_hour: float) -> NodeShape:
    """A node of the run as a shape: its advertised capacity at the price the report paid for it."""
    itype = InstanceType(name, vcpus, ram_mib, usd_per_hour)
    return NodeShape(itype, Market.SPOT if preemptible else Market.ON_DEMAND, Resources(vcpus, ram_mib), usd_per_hour)


def run_floor(ran: Iterable[tuple[int, float]], shapes: Sequence[NodeShape], cap_s: float, cost_usd: float, *,
              one_reliable_node: bool = True) -> RunFloor | None:
    """The floor of a run whose finished tasks ran ``ran`` ((vCPUs asked, wall seconds) each), bought from
    ``shapes``, by its makespan ``cap_s`` (see the module docstring); None when there is nothing to
    bound (no task with a runtime, no shape) or the records contradict themselves (a task longer than
    the makespan)."""
    tasks = [TaskSpec(f"t{i}", vcpus, 0, PREEMPTIBLE, runtime_s=wall) for i, (vcpus, wall) in enumerate(ran)
             if vcpus > 0 and wall > 0]
    shapes = [s for s in shapes if s.usable.vcpus > 0]
    if not tasks or not shapes:
        return None
    usd = usd_lower_bound(tasks, shapes, cap_s, boot_s=RUN_BOOT_S, min_billed_s=RUN_MIN_BILLED_S,
                          one_reliable_node=one_reliable_node)
    if not math.isfinite(usd):
        return None
    return RunFloor(usd=usd, cost_over_floor=cost_usd / usd if usd > 0 else None, boot_s=RUN_BOOT_S, cap_s=cap_s,
                    critical_path_s=critical_path_s(tasks), critical_path_from=LONGEST_TASK, tasks=len(tasks),
                    vcpu_s=sum(t.vcpus * runtime_s(t) for t in tasks), shapes=len(shapes),
                    one_reliable_node=one_reliable_node)
