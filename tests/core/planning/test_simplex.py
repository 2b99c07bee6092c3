"""plastic.core.planning.simplex.maximize: max c.x s.t. A x <= b, x >= 0, b >= 0."""

from __future__ import annotations

import math
import threading
from fractions import Fraction
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.planning.simplex import maximize

TOL = 1e-7


def assert_certified_optimum(c, a, b, res, tol=TOL):
    """x primal feasible, y dual feasible, equal objectives, complementary slackness.

    Together these *prove* optimality of both x and y, independently of how
    maximize() got there.
    """
    assert res.status == "optimal"
    m, n = len(a), len(c)
    x, y = res.x, res.duals
    assert len(x) == n and len(y) == m
    assert all(v >= -tol for v in x), x
    assert all(v >= -tol for v in y), y
    row_act = [sum(a[i][j] * x[j] for j in range(n)) for i in range(m)]
    for i in range(m):
        assert row_act[i] <= b[i] + tol * (1 + abs(b[i])), (i, row_act[i], b[i])
    col_price = [sum(a[i][j] * y[i] for i in range(m)) for j in range(n)]
    for j in range(n):
        assert col_price[j] >= c[j] - tol * (1 + abs(c[j])), (j, col_price[j], c[j])
    primal = sum(cj * xj for cj, xj in zip(c, x))
    dual = sum(bi * yi for bi, yi in zip(b, y))
    scale = 1 + abs(primal)
    assert res.objective == pytest.approx(primal, abs=tol * scale)
    assert dual == pytest.approx(primal, abs=tol * scale)
    # complementary slackness
    for i in range(m):
        assert y[i] * (b[i] - row_act[i]) == pytest.approx(0.0, abs=tol * scale)
    for j in range(n):
        assert x[j] * (col_price[j] - c[j]) == pytest.approx(0.0, abs=tol * scale)


# ------------------------------------------------------------ hand-solved LPs

def test_textbook_two_variable_lp():
    # max 3x + 5y  s.t.  x <= 4, 2y <= 12, 3x + 2y <= 18   ->  (2, 6), 36
    # dual: min 4u + 12v + 18w s.t. u + 3w >= 3, 2v + 2w >= 5  ->  (0, 3/2, 1)
    c, a, b = [3, 5], [[1, 0], [0, 2], [3, 2]], [4, 12, 18]
    res = maximize(c, a, b)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(36)
    assert res.x == pytest.approx((2, 6))
    assert res.duals == pytest.approx((0, 1.5, 1))
    assert_certified_optimum(c, a, b, res)


def test_vertex_at_intersection_of_two_rows():
    # max x + y s.t. x + 2y <= 4, 3x + y <= 6 -> x = 8/5, y = 6/5, value 14/5; duals (2/5, 1/5)
    c, a, b = [1, 1], [[1, 2], [3, 1]], [4, 6]
    res = maximize(c, a, b)
    assert res.objective == pytest.approx(2.8)
    assert res.x == pytest.approx((1.6, 1.2))
    assert res.duals == pytest.approx((0.4, 0.2))
    assert_certified_optimum(c, a, b, res)


def test_optimum_on_an_axis_leaves_other_variable_zero():
    # max 2x + y s.t. x + y <= 3, x <= 2 (x bound), y unconstrained except through row 1
    # -> x = 2, y = 1, value 5; both rows bind: duals (1, 1)
    c, a, b = [2, 1], [[1, 1], [1, 0]], [3, 2]
    res = maximize(c, a, b)
    assert res.objective == pytest.approx(5)
    assert res.x == pytest.approx((2, 1))
    assert res.duals == pytest.approx((1, 1))


def test_negative_costs_keep_origin():
    c, a, b = [-1, -2], [[1, 1]], [5]
    res = maximize(c, a, b)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(0)
    assert res.x == pytest.approx((0, 0))
    assert_certified_optimum(c, a, b, res)


def test_zero_objective_is_optimal_at_zero():
    res = maximize([0, 0, 0], [[1, 2, 3]], [6])
    assert res.status == "optimal" and res.objective == 0


def test_degenerate_vertex_three_rows_through_one_point():
    # (1, 1) lies on x <= 1, y <= 1 and x + y <= 2 at once
    c, a, b = [1, 1], [[1, 0], [0, 1], [1, 1]], [1, 1, 2]
    res = maximize(c, a, b)
    assert res.objective == pytest.approx(2)
    assert res.x == pytest.approx((1, 1))
    assert_certified_optimum(c, a, b, res)


def test_degenerate_origin_zero_rhs():
    # x - y <= 0 has b = 0: the first pivot is degenerate (ratio 0)
    c, a, b = [1, 0], [[1, -1], [1, 1]], [0, 2]
    res = maximize(c, a, b)
    assert res.objective == pytest.approx(1)
    assert res.x == pytest.approx((1, 1))
    assert_certified_optimum(c, a, b, res)


def test_duplicate_rows():
    c, a, b = [2, 1], [[1, 1], [1, 1], [1, 0]], [3, 3, 2]
    res = maximize(c, a, b)
    assert res.objective == pytest.approx(5)
    assert_certified_optimum(c, a, b, res)


def test_beale_cycling_example_terminates():
    # Beale (1955): the textbook LP on which Dantzig's rule cycles forever.
    # max 3/4 x1 - 150 x2 + 1/50 x3 - 6 x4 ; optimum 1/20 at x = (1/25, 0, 1, 0)
    c = [0.75, -150, 0.02, -6]
    a = [[0.25, -60, -0.04, 9], [0.5, -90, -0.02, 3], [0, 0, 1, 0]]
    b = [0, 0, 1]
    # run in a daemon thread so that a cycling simplex fails this test instead of hanging the suite
    out: list = []
    worker = threading.Thread(target=lambda: out.append(maximize(c, a, b)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert out, "maximize() did not terminate on Beale's example (cycling)"
    res = out[0]
    assert res.status == "optimal"
    assert res.objective == pytest.approx(0.05)
    assert res.x == pytest.approx((0.04, 0, 1, 0), abs=1e-9)
    assert_certified_optimum(c, a, b, res)


def test_unbounded_detected():
    # x - y <= 1: along (1, 1) the objective x + y grows forever
    res = maximize([1, 1], [[1, -1]], [1])
    assert res.status == "unbounded"
    assert res.objective == math.inf


def test_unbounded_with_no_rows():
    assert maximize([1.0], [], []).status == "unbounded"


def test_no_rows_nonpositive_costs():
    res = maximize([0.0, -1.0], [], [])
    assert res.status == "optimal" and res.objective == 0 and res.x == (0.0, 0.0) and res.duals == ()


def test_unbounded_variable_absent_from_binding_rows():
    # y appears in no row with a positive coefficient
    res = maximize([1, 1], [[1, 0], [2, -3]], [4, 4])
    assert res.status == "unbounded"


def test_negative_rhs_rejected():
    with pytest.raises(ValueError):
        maximize([1], [[1]], [-1])


def test_inputs_not_mutated():
    c, a, b = [3, 5], [[1, 0], [0, 2], [3, 2]], [4, 12, 18]
    snapshot = ([*c], [list(r) for r in a], [*b])
    maximize(c, a, b)
    assert (c, a, b) == snapshot


# ------------------------------------------------------------ brute force

def brute_force_2d(c, a, b):
    """The optimum of max c.x, A x <= b, x >= 0 in two variables by vertex enumeration.

    Exact (Fractions). Returns ("unbounded", None) or ("optimal", value).
    """
    rows = [(Fraction(r[0]), Fraction(r[1]), Fraction(bi)) for r, bi in zip(a, b)]
    rows += [(Fraction(-1), Fraction(0), Fraction(0)), (Fraction(0), Fraction(-1), Fraction(0))]
    cx, cy = Fraction(c[0]), Fraction(c[1])

    def feasible(x, y):
        return all(p * x + q * y <= r for p, q, r in rows)

    # Unbounded iff an extreme ray d of the recession cone {d >= 0, A d <= 0} has c.d > 0.
    # In 2-D every extreme ray lies on the boundary line of one constraint.
    rays = [(Fraction(1), Fraction(0)), (Fraction(0), Fraction(1))]
    for p, q, _ in rows:
        rays += [(q, -p), (-q, p)]
    for dx, dy in rays:
        if (dx, dy) == (0, 0) or dx < 0 or dy < 0:
            continue
        if all(p * dx + q * dy <= 0 for p, q, _ in rows[:-2]) and cx * dx + cy * dy > 0:
            return "unbounded", None
    best = None
    for (p1, q1, r1), (p2, q2, r2) in combinations(rows, 2):
        det = p1 * q2 - p2 * q1
        if det == 0:
            continue
        x = (r1 * q2 - r2 * q1) / det
        y = (p1 * r2 - p2 * r1) / det
        if feasible(x, y):
            v = cx * x + cy * y
            best = v if best is None or v > best else best
    assert best is not None  # the origin is always a feasible vertex
    return "optimal", best


def test_brute_force_agrees_with_hand_solutions():
    # the oracle itself, on the LPs solved by hand above
    assert brute_force_2d([3, 5], [[1, 0], [0, 2], [3, 2]], [4, 12, 18]) == ("optimal", 36)
    assert brute_force_2d([1, 1], [[1, 2], [3, 1]], [4, 6]) == ("optimal", Fraction(14, 5))
    assert brute_force_2d([1, 1], [[1, -1]], [1])[0] == "unbounded"
    assert brute_force_2d([1, 1], [[1, 0], [2, -3]], [4, 4])[0] == "unbounded"
    assert brute_force_2d([-1, 1], [[1, -1]], [1]) == ("unbounded", None)
    assert brute_force_2d([1, -1], [[1, -1]], [1]) == ("optimal", 1)


coef = st.integers(-4, 6)
lp_2d = st.integers(0, 6).flatmap(
    lambda m: st.tuples(
        st.lists(st.integers(-3, 6), min_size=2, max_size=2),
        st.lists(st.lists(coef, min_size=2, max_size=2), min_size=m, max_size=m),
        st.lists(st.one_of(st.just(0), st.integers(0, 12)), min_size=m, max_size=m),
    )
)


@settings(max_examples=300, deadline=None)
@given(lp_2d)
def test_matches_vertex_enumeration(lp):
    c, a, b = lp
    status, value = brute_force_2d(c, a, b)
    res = maximize(c, a, b)
    assert res.status == status
    if status == "optimal":
        assert res.objective == pytest.approx(float(value), rel=1e-9, abs=1e-9)
        assert_certified_optimum(c, a, b, res)


lp_nd = st.tuples(st.integers(1, 5), st.integers(1, 6)).flatmap(
    lambda nm: st.tuples(
        st.lists(st.floats(-2, 5, allow_nan=False).map(lambda v: round(v, 3)), min_size=nm[0], max_size=nm[0]),
        st.lists(
            st.lists(st.floats(0, 10).map(lambda v: round(v, 3)), min_size=nm[0], max_size=nm[0]),
            min_size=nm[1], max_size=nm[1],
        ),
        st.lists(st.one_of(st.just(0.0), st.floats(0, 50).map(lambda v: round(v, 3))),
                 min_size=nm[1], max_size=nm[1]),
    )
)


@settings(max_examples=200, deadline=None)
@given(lp_nd)
def test_optimum_certified_by_duals_in_higher_dimension(lp):
    """Nonnegative A: bounded iff every variable with c_j > 0 appears in some row; else unbounded."""
    c, a, b = lp
    res = maximize(c, a, b)
    bounded = all(cj <= 0 or any(row[j] > 0 for row in a) for j, cj in enumerate(c))
    if not bounded:
        assert res.status == "unbounded"
        return
    assert_certified_optimum(c, a, b, res, tol=1e-6)
