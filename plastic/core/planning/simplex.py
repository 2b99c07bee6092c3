"""A small dense simplex for the planner's lower bound.

The bound's LP has a handful of constraints (cpu, ram, reliable cpu, reliable
ram, one reliable node) and one column per node shape, so its dual has at most
five variables and a feasible origin.  That makes a single-phase tableau
simplex with Bland's rule exact enough and fast, with nothing but the standard
library.
"""

from __future__ import annotations

from dataclasses import dataclass

_EPS = 1e-12


@dataclass(frozen=True, slots=True)
class SimplexResult:
    status: str  # "optimal" | "unbounded"
    objective: float
    x: tuple[float, ...]  # the maximiser
    duals: tuple[float, ...]  # shadow prices of the <= rows (the dual problem's solution)


def maximize(c: list[float], a: list[list[float]], b: list[float]) -> SimplexResult:
    """Maximise c.x subject to a.x <= b, x >= 0, where every b_i >= 0.

    Returns the optimum and the row duals (the minimiser of the dual problem
    min b.y s.t. a^T y >= c, y >= 0).
    """
    m, n = len(a), len(c)
    if any(bi < 0 for bi in b):
        raise ValueError("maximize() needs b >= 0 (feasible origin)")
    # Tableau rows: [a | I | b]; objective row: [-c | 0 | 0].
    width = n + m + 1
    rows = [list(a[i]) + [1.0 if j == i else 0.0 for j in range(m)] + [float(b[i])] for i in range(m)]
    obj = [-float(v) for v in c] + [0.0] * m + [0.0]
    basis = [n + i for i in range(m)]
    while True:
        # Bland: entering = lowest index with a negative reduced cost.
        entering = next((j for j in range(n + m) if obj[j] < -_EPS), None)
        if entering is None:
            break
        best_row, best_ratio = None, None
        for i in range(m):
            coef = rows[i][entering]
            if coef > _EPS:
                ratio = rows[i][-1] / coef
                if (
                    best_ratio is None
                    or ratio < best_ratio - _EPS
                    or (abs(ratio - best_ratio) <= _EPS and basis[i] < basis[best_row])
                ):
                    best_row, best_ratio = i, ratio
        if best_row is None:
            return SimplexResult("unbounded", float("inf"), (), ())
        pivot = rows[best_row][entering]
        prow = [v / pivot for v in rows[best_row]]
        rows[best_row] = prow
        for i in range(m):
            if i != best_row:
                f = rows[i][entering]
                if f != 0.0:
                    r = rows[i]
                    rows[i] = [r[k] - f * prow[k] for k in range(width)]
        f = obj[entering]
        obj = [obj[k] - f * prow[k] for k in range(width)]
        basis[best_row] = entering
    x = [0.0] * n
    for i, var in enumerate(basis):
        if var < n:
            x[var] = rows[i][-1]
    duals = tuple(max(0.0, obj[n + i]) for i in range(m))
    return SimplexResult("optimal", obj[-1], tuple(x), duals)
