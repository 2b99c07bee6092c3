"""plastic.core.planning.lower_bound: the LP relaxation and its dual prices.

The reference here is an independent brute force over basic solutions of the
same LP, written out in full below.
"""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.errors import PlanningError
from plastic.core.model import (
    PREEMPTIBLE,
    RELIABLE,
    Catalog,
    InstanceType,
    Market,
    Preempt,
    Reserve,
    Resources,
    TaskSpec,
    node_shapes,
)
from plastic.core.planning.lower_bound import lower_bound
from plastic.core.planning.planner import solve
from tests.fakes.catalogs import (
    CATALOG,
    CHEAPEST_ON_DEMAND,
    INSTANCE_TYPES,
    SHAPES,
    sub_shapes,
)

GIB = 1024


# ------------------------------------------------------------ the brute force

def _solve_square(m: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when (numerically) singular."""
    k = len(m)
    aug = [list(row) + [r] for row, r in zip(m, rhs)]
    for col in range(k):
        piv = max(range(col, k), key=lambda r: abs(aug[r][col]))
        if abs(aug[piv][col]) < 1e-12:
            return None
        aug[col], aug[piv] = aug[piv], aug[col]
        for r in range(k):
            if r != col and aug[r][col] != 0.0:
                f = aug[r][col] / aug[col][col]
                aug[r] = [a - f * p for a, p in zip(aug[r], aug[col])]
    return [aug[i][k] / aug[i][i] for i in range(k)]


def brute_force_min(costs: list[float], g: list[list[float]], h: list[float]) -> float:
    """min costs.x  s.t.  g x >= h, x >= 0  (costs > 0, so the minimum is attained at a vertex).

    A vertex (basic feasible solution) has k nonzero columns and k rows held
    with equality (the other rows' slacks are basic), k <= number of rows.
    Enumerate every choice of k columns and k tight rows, solve the k x k
    system, keep the solutions that are nonnegative and satisfy all rows.
    """
    m, n = len(g), len(costs)
    best = 0.0 if all(hi <= 0 for hi in h) else float("inf")
    for k in range(1, min(m, n) + 1):
        for cols in combinations(range(n), k):
            for rows in combinations(range(m), k):
                x = _solve_square([[g[r][c] for c in cols] for r in rows], [h[r] for r in rows])
                if x is None or any(v < -1e-9 for v in x):
                    continue
                full = [0.0] * n
                for c, v in zip(cols, x):
                    full[c] = v
                if all(sum(g[r][j] * full[j] for j in range(n)) >= h[r] - 1e-9 * (1 + abs(h[r]))
                       for r in range(m)):
                    best = min(best, sum(costs[c] * v for c, v in zip(cols, x)))
    return best


def bf_all_preemptible(tasks, shapes) -> float:
    """Every task preemptible: rows cpu, ram over all shapes, and >= 1 on-demand node."""
    cpu = sum(t.vcpus for t in tasks)
    ram = sum(t.ram_mib for t in tasks) / GIB
    g = [
        [s.usable.vcpus for s in shapes],
        [s.usable.ram_mib / GIB for s in shapes],
        [1.0 if s.market is Market.ON_DEMAND else 0.0 for s in shapes],
    ]
    return brute_force_min([s.usd_per_hour for s in shapes], g, [cpu, ram, 1.0])


def bf_all_reliable(tasks, shapes) -> float:
    """Every task reliable: the on-demand nodes alone must cover all of the demand,
    which makes the all-shapes rows redundant and spot columns useless (they cost
    money and help only redundant rows), so the LP is the 3-row one over
    on-demand shapes."""
    od = [s for s in shapes if s.market is Market.ON_DEMAND]
    cpu = sum(t.vcpus for t in tasks)
    ram = sum(t.ram_mib for t in tasks) / GIB
    g = [[s.usable.vcpus for s in od], [s.usable.ram_mib / GIB for s in od], [1.0] * len(od)]
    return brute_force_min([s.usd_per_hour for s in od], g, [cpu, ram, 1.0])


def bf_general(tasks, shapes) -> float:
    """The full five-row LP (usable on small shape sets only)."""
    cpu = sum(t.vcpus for t in tasks)
    ram = sum(t.ram_mib for t in tasks) / GIB
    rcpu = sum(t.vcpus for t in tasks if t.preempt == RELIABLE)
    rram = sum(t.ram_mib for t in tasks if t.preempt == RELIABLE) / GIB
    od = [1.0 if s.market is Market.ON_DEMAND else 0.0 for s in shapes]
    g = [
        [s.usable.vcpus for s in shapes],
        [s.usable.ram_mib / GIB for s in shapes],
        [s.usable.vcpus * o for s, o in zip(shapes, od)],
        [s.usable.ram_mib / GIB * o for s, o in zip(shapes, od)],
        od,
    ]
    return brute_force_min([s.usd_per_hour for s in shapes], g, [cpu, ram, rcpu, rram, 1.0])


def test_brute_force_on_hand_solved_lps():
    # min x1 + x2 s.t. x1 + 2 x2 >= 4, 3 x1 + x2 >= 6  ->  (8/5, 6/5), 14/5
    assert brute_force_min([1, 1], [[1, 2], [3, 1]], [4, 6]) == pytest.approx(2.8)
    # a cheap column covering one row only, an expensive one covering both
    assert brute_force_min([1, 10], [[1, 1], [0, 1]], [5, 1]) == pytest.approx(4 + 10)
    assert brute_force_min([1, 3], [[1, 1], [0, 1]], [5, 1]) == pytest.approx(7)


# ------------------------------------------------------------ helpers

def tasks_of(demands, preempt) -> list[TaskSpec]:
    return [TaskSpec(f"t{i}", c, r, preempt) for i, (c, r) in enumerate(demands)]


def assert_dual_feasible(prices, shapes, tol=1e-9):
    for p in (prices.usd_per_vcpu_hour, prices.usd_per_mib_hour, prices.reliable_usd_per_vcpu_hour,
              prices.reliable_usd_per_mib_hour, prices.reliable_node_usd_per_hour):
        assert p >= -tol
    for s in shapes:
        worth = prices.usd_per_vcpu_hour * s.usable.vcpus + prices.usd_per_mib_hour * s.usable.ram_mib
        if s.reliable:
            worth += (prices.reliable_usd_per_vcpu_hour * s.usable.vcpus
                      + prices.reliable_usd_per_mib_hour * s.usable.ram_mib
                      + prices.reliable_node_usd_per_hour)
        assert worth <= s.usd_per_hour + tol, (s.name, s.market, worth, s.usd_per_hour)


def dual_objective(prices, tasks) -> float:
    total = Resources(sum(t.vcpus for t in tasks), sum(t.ram_mib for t in tasks))
    rel = [t for t in tasks if not t.preempt.preemptible]
    reliable = Resources(sum(t.vcpus for t in rel), sum(t.ram_mib for t in rel))
    return (prices.value(total, reliable=False)
            + prices.reliable_usd_per_vcpu_hour * reliable.vcpus
            + prices.reliable_usd_per_mib_hour * reliable.ram_mib
            + prices.reliable_node_usd_per_hour)


def assert_mix_feasible(lb, tasks, tol=1e-6):
    """The LP's fractional node mix covers the demand and costs the bound."""
    cpu = sum(t.vcpus for t in tasks)
    ram = sum(t.ram_mib for t in tasks)
    rel = [t for t in tasks if not t.preempt.preemptible]
    assert all(x > 0 for _, x in lb.fractional_nodes)
    cost = sum(s.usd_per_hour * x for s, x in lb.fractional_nodes)
    assert cost == pytest.approx(lb.usd_per_hour, rel=1e-6, abs=1e-9)
    have_cpu = sum(s.usable.vcpus * x for s, x in lb.fractional_nodes)
    have_ram = sum(s.usable.ram_mib * x for s, x in lb.fractional_nodes)
    od = [(s, x) for s, x in lb.fractional_nodes if s.reliable]
    assert have_cpu >= cpu - tol * (1 + cpu)
    assert have_ram >= ram - tol * (1 + ram)
    assert sum(s.usable.vcpus * x for s, x in od) >= sum(t.vcpus for t in rel) * (1 - tol) - tol
    assert sum(s.usable.ram_mib * x for s, x in od) >= sum(t.ram_mib for t in rel) * (1 - tol) - tol
    assert sum(x for _, x in od) >= 1 - tol


# ------------------------------------------------------------ hand-solved values

def test_no_tasks_costs_the_cheapest_on_demand_node():
    lb = lower_bound([], SHAPES)
    assert lb.usd_per_hour == pytest.approx(CHEAPEST_ON_DEMAND)
    assert [(s.name, s.market) for s, _ in lb.fractional_nodes] == [("c5.large", Market.ON_DEMAND)]


def test_one_small_task_either_kind():
    for preempt in (RELIABLE, PREEMPTIBLE, Preempt(2)):
        lb = lower_bound([TaskSpec("a", 1, 1024, preempt)], SHAPES)
        assert lb.usd_per_hour == pytest.approx(0.085)


def test_reliable_compute_family_ratio():
    # 16 vCPU / 32 GiB is exactly the c5 ratio and c5 is the cheapest od per vCPU (0.0425): 0.68
    lb = lower_bound(tasks_of([(16, 32 * GIB)], RELIABLE), SHAPES)
    assert lb.usd_per_hour == pytest.approx(0.68)


def test_errors_without_shapes_or_on_demand():
    with pytest.raises(PlanningError):
        lower_bound([TaskSpec("a", 1, 1, PREEMPTIBLE)], [])
    spot_only = [s for s in SHAPES if s.market is Market.SPOT]
    with pytest.raises(PlanningError) as e:
        lower_bound([TaskSpec("a", 1, 1, PREEMPTIBLE)], spot_only)
    assert e.value.binding_constraint == "catalog"


# ------------------------------------------------------------ against the brute force

demands = st.lists(st.tuples(st.integers(1, 16), st.integers(256, 65536)), min_size=0, max_size=40)


@settings(max_examples=30, deadline=None)
@given(demands)
def test_all_preemptible_matches_brute_force(ds):
    tasks = tasks_of(ds, PREEMPTIBLE)
    lb = lower_bound(tasks, SHAPES)
    assert lb.usd_per_hour == pytest.approx(bf_all_preemptible(tasks, SHAPES), rel=1e-6)


@settings(max_examples=25, deadline=None)
@given(demands)
def test_all_reliable_matches_brute_force(ds):
    tasks = tasks_of(ds, RELIABLE)
    lb = lower_bound(tasks, SHAPES)
    assert lb.usd_per_hour == pytest.approx(bf_all_reliable(tasks, SHAPES), rel=1e-6)


@pytest.mark.parametrize("ds", [
    [(1, 256)] * 100,                      # cpu-bound, many tiny tasks
    [(1, 60000)] * 10,                     # memory-bound
    [(16, 65536)] * 3 + [(2, 1024)] * 7,
    [(5, 10000), (7, 3000), (3, 50000)],
])
@pytest.mark.parametrize("preempt", [RELIABLE, PREEMPTIBLE])
def test_fixed_cases_match_brute_force(ds, preempt):
    tasks = tasks_of(ds, preempt)
    bf = bf_all_reliable if preempt == RELIABLE else bf_all_preemptible
    lb = lower_bound(tasks, SHAPES)
    assert lb.usd_per_hour == pytest.approx(bf(tasks, SHAPES), rel=1e-6)
    assert_dual_feasible(lb.prices, SHAPES)
    assert_mix_feasible(lb, tasks)


small_catalogs = st.lists(st.sampled_from([t.name for t in INSTANCE_TYPES]), min_size=1, max_size=4, unique=True)
mixed_tasks = st.lists(
    st.tuples(st.integers(1, 16), st.integers(256, 65536), st.sampled_from([RELIABLE, PREEMPTIBLE, Preempt(2)])),
    max_size=30,
)


@settings(max_examples=40, deadline=None)
@given(small_catalogs, mixed_tasks)
def test_mixed_reliability_matches_full_lp_brute_force(names, ts):
    """All five rows on up to four types (eight columns), where enumeration stays cheap."""
    shapes = sub_shapes(*names)
    tasks = [TaskSpec(f"t{i}", c, r, p) for i, (c, r, p) in enumerate(ts)]
    lb = lower_bound(tasks, shapes)
    assert lb.usd_per_hour == pytest.approx(bf_general(tasks, shapes), rel=1e-6)


# ------------------------------------------------------------ duals and structure

@settings(max_examples=40, deadline=None)
@given(mixed_tasks, st.sampled_from([Reserve(), Reserve(1, 1024), Reserve(0, 512)]))
def test_prices_are_an_optimal_dual(ts, reserve):
    shapes = node_shapes(CATALOG, reserve)
    tasks = [TaskSpec(f"t{i}", c, r, p) for i, (c, r, p) in enumerate(ts)]
    lb = lower_bound(tasks, shapes)
    assert_dual_feasible(lb.prices, shapes)
    # strong duality: the priced demand equals the bound
    assert dual_objective(lb.prices, tasks) == pytest.approx(lb.usd_per_hour, rel=1e-6)
    assert_mix_feasible(lb, tasks)


def test_reliable_demand_forces_on_demand_capacity():
    ds = [(4, 8 * GIB)] * 20  # 80 vCPU, 160 GiB
    pre = lower_bound(tasks_of(ds, PREEMPTIBLE), SHAPES)
    rel = lower_bound(tasks_of(ds, RELIABLE), SHAPES)
    # all of it on demand: c5 at 0.0425 per vCPU with 2 GiB each covers it exactly -> 80 * 0.0425
    assert rel.usd_per_hour == pytest.approx(3.4)
    assert pre.usd_per_hour < rel.usd_per_hour * 0.6
    od_cpu = sum(s.usable.vcpus * x for s, x in rel.fractional_nodes if s.reliable)
    od_ram = sum(s.usable.ram_mib * x for s, x in rel.fractional_nodes if s.reliable)
    assert od_cpu >= 80 - 1e-6 and od_ram >= 160 * GIB * (1 - 1e-9)
    assert rel.prices.reliable_usd_per_vcpu_hour + rel.prices.reliable_usd_per_mib_hour > 0
    # preemptible demand is bought mostly on spot
    spot_cpu = sum(s.usable.vcpus * x for s, x in pre.fractional_nodes if not s.reliable)
    assert spot_cpu >= 60


def test_escalating_tasks_count_as_preemptible_in_the_bound():
    ds = [(4, 8 * GIB)] * 20
    assert lower_bound(tasks_of(ds, Preempt(3)), SHAPES).usd_per_hour == pytest.approx(
        lower_bound(tasks_of(ds, PREEMPTIBLE), SHAPES).usd_per_hour)


@settings(max_examples=30, deadline=None)
@given(mixed_tasks)
def test_more_reliability_or_reserve_never_lowers_the_bound(ts):
    tasks = [TaskSpec(f"t{i}", c, r, p) for i, (c, r, p) in enumerate(ts)]
    base = lower_bound(tasks, SHAPES).usd_per_hour
    hardened = [TaskSpec(t.id, t.vcpus, t.ram_mib, RELIABLE) for t in tasks]
    assert lower_bound(hardened, SHAPES).usd_per_hour >= base - 1e-9
    reserved = node_shapes(CATALOG, Reserve(1, 1024))
    assert lower_bound(tasks, reserved).usd_per_hour >= base - 1e-9


@pytest.mark.parametrize("preempt", [RELIABLE, PREEMPTIBLE, Preempt(1)])
def test_bound_never_exceeds_a_solved_plan(preempt):
    ds = [(3, 5000), (1, 30000), (7, 2000), (2, 2048), (16, 20000), (1, 256)] * 6
    tasks = tasks_of(ds, preempt)
    lb = lower_bound(tasks, SHAPES)
    for effort in (1, 2):
        sol = solve(tasks, SHAPES, effort=effort)
        assert lb.usd_per_hour <= sol.usd_per_hour + 1e-9
        assert sol.bound.usd_per_hour == pytest.approx(lb.usd_per_hour)


def test_shape_order_does_not_change_the_bound():
    tasks = tasks_of([(3, 5000), (1, 30000), (7, 2000)] * 5, PREEMPTIBLE) + \
        tasks_of([(2, 9000)] * 4, RELIABLE)
    a = lower_bound(tasks, SHAPES).usd_per_hour
    b = lower_bound(tasks, tuple(reversed(SHAPES))).usd_per_hour
    assert a == pytest.approx(b, rel=1e-9)


def test_shapes_without_spot_price():
    # a type with no spot market contributes one (on-demand) shape only
    cat = Catalog((InstanceType("x.big", 8, 32 * GIB, 0.4, None),))
    shapes = node_shapes(cat)
    assert [s.market for s in shapes] == [Market.ON_DEMAND]
    lb = lower_bound(tasks_of([(8, 32 * GIB)] * 3, PREEMPTIBLE), shapes)
    assert lb.usd_per_hour == pytest.approx(1.2)
