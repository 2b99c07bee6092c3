"""The LP relaxation that bounds every plan's cost from below.

    minimise   sum_s price_s * x_s            over node shapes s (type, market)
    subject to sum_s vcpus_s x_s     >= all vcpus demanded
               sum_s ram_s   x_s     >= all ram demanded
               sum_od vcpus_s x_s    >= vcpus demanded by reliable tasks
               sum_od ram_s   x_s    >= ram demanded by reliable tasks
               sum_od x_s            >= 1   (at least one reliable node)
               x >= 0

It is solved through its dual (five variables, feasible origin), whose
optimal values are also the planner's resource prices: dollars per vCPU-hour
and per MiB-hour of any capacity, plus the premium for reliable capacity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from plastic.core.errors import PlanningError
from plastic.core.model import NodeShape, Resources, TaskSpec
from plastic.core.planning.simplex import maximize


@dataclass(frozen=True, slots=True)
class Prices:
    """Dual prices: what a unit of each resource is worth at the LP optimum."""

    usd_per_vcpu_hour: float
    usd_per_mib_hour: float
    reliable_usd_per_vcpu_hour: float
    reliable_usd_per_mib_hour: float
    reliable_node_usd_per_hour: float

    def value(self, demand: Resources, *, reliable: bool) -> float:
        return self.value_of(demand.vcpus, demand.ram_mib, reliable=reliable)

    def value_of(self, vcpus: int, ram_mib: int, *, reliable: bool) -> float:
        v = self.usd_per_vcpu_hour * vcpus + self.usd_per_mib_hour * ram_mib
        if reliable:
            v += self.reliable_usd_per_vcpu_hour * vcpus + self.reliable_usd_per_mib_hour * ram_mib
        return v


@dataclass(frozen=True, slots=True)
class LowerBound:
    usd_per_hour: float
    prices: Prices
    fractional_nodes: tuple[tuple[NodeShape, float], ...]  # the LP's (shape, count) mix, count > 0


def demand_totals(tasks: Iterable[TaskSpec]) -> tuple[Resources, Resources]:
    """(all demand, reliable demand)."""
    cpu = ram = rcpu = rram = 0
    for t in tasks:
        cpu += t.vcpus
        ram += t.ram_mib
        if not t.preempt.preemptible:
            rcpu += t.vcpus
            rram += t.ram_mib
    return Resources(cpu, ram), Resources(rcpu, rram)


def lower_bound(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape]) -> LowerBound:
    """Solve the LP relaxation for `tasks` over `shapes`."""
    total, reliable = demand_totals(tasks)
    if not shapes:
        raise PlanningError("the catalog offers no usable node shape", binding_constraint="catalog")
    if not any(s.reliable for s in shapes):
        raise PlanningError("the catalog has no on-demand capacity for the reliable node",
                            binding_constraint="catalog")
    # Scale to keep the tableau well conditioned: vCPUs and GiB.
    gib = 1024.0
    b_obj = [total.vcpus, total.ram_mib / gib, reliable.vcpus, reliable.ram_mib / gib, 1.0]
    rows: list[list[float]] = []
    rhs: list[float] = []
    for s in shapes:
        cpu, ram = float(s.usable.vcpus), s.usable.ram_mib / gib
        if s.reliable:
            rows.append([cpu, ram, cpu, ram, 1.0])
        else:
            rows.append([cpu, ram, 0.0, 0.0, 0.0])
        rhs.append(s.usd_per_hour)
    res = maximize(b_obj, rows, rhs)
    if res.status != "optimal":  # pragma: no cover - every shape has positive capacity, so bounded
        raise PlanningError("the lower-bound LP is unbounded", binding_constraint="catalog")
    y = res.x
    prices = Prices(
        usd_per_vcpu_hour=y[0],
        usd_per_mib_hour=y[1] / gib,
        reliable_usd_per_vcpu_hour=y[2],
        reliable_usd_per_mib_hour=y[3] / gib,
        reliable_node_usd_per_hour=y[4],
    )
    mix = tuple((s, x) for s, x in zip(shapes, res.duals, strict=True) if x > 1e-9)
    return LowerBound(usd_per_hour=res.objective, prices=prices, fractional_nodes=mix)
