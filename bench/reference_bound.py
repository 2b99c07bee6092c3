"""A tighter lower bound for the benchmark only: the per-task LP relaxation.

plastic's own bound (plastic/core/planning/lower_bound.py) lets every vCPU and MiB of
demand go anywhere. This one keeps each task whole: a task may be split across
node shapes only in fractions of the whole task, and only onto shapes that
can hold it alone (market and pinned type respected):

    minimise   sum_s price_s x_s
    subject to sum_j vcpus_j z_js <= vcpus_s x_s,  sum_j ram_j z_js <= ram_s x_s   (every shape s)
               sum_s z_js = 1                                                     (every task j)
               sum_{on-demand s} x_s >= 1,  x, z >= 0

Every plan is a feasible point of it, so it is a valid lower bound, and a
tighter one when big, memory-hungry tasks only fit dear shapes (spot prices
are not linear in size). It needs an LP solver: SciPy's HiGHS, a benchmark
extra (`pip install -e '.[bench]'`), never a dependency of plastic itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from plastic.core.model import NodeShape, TaskSpec
from plastic.core.planning.packing import ShapeMenu


def per_task_lower_bound(tasks: Sequence[TaskSpec], shapes: Sequence[NodeShape]) -> float | None:
    """The per-task LP's optimum in $/h, or None when SciPy is not installed."""
    try:
        import numpy as np
        from scipy.optimize import linprog
        from scipy.sparse import coo_matrix
    except ImportError:
        return None
    menu = ShapeMenu(shapes)
    index = {id(s): i for i, s in enumerate(menu.shapes)}
    n_shapes = len(menu.shapes)
    # Identical tasks are interchangeable: group them, the LP stays exact with multiplicities.
    groups: dict[tuple, int] = {}
    reps: dict[tuple, TaskSpec] = {}
    for t in tasks:
        key = (t.vcpus, t.ram_mib, t.preempt.preemptible, t.instance_type)
        groups[key] = groups.get(key, 0) + 1
        reps.setdefault(key, t)
    pairs = [(g, index[id(s)]) for g, key in enumerate(groups) for s in menu.holding(reps[key])]
    n_vars = n_shapes + len(pairs)
    cost = np.zeros(n_vars)
    cost[:n_shapes] = [s.usd_per_hour for s in menu.shapes]
    rows, cols, vals = [], [], []
    for s_i, s in enumerate(menu.shapes):
        rows += [2 * s_i, 2 * s_i + 1]
        cols += [s_i, s_i]
        vals += [-float(s.usable.vcpus), -s.usable.ram_mib / 1024.0]
        if s.reliable:
            rows.append(2 * n_shapes)
            cols.append(s_i)
            vals.append(-1.0)
    keys = list(groups)
    for k, (g, s_i) in enumerate(pairs):
        t = reps[keys[g]]
        rows += [2 * s_i, 2 * s_i + 1]
        cols += [n_shapes + k, n_shapes + k]
        vals += [float(t.vcpus), t.ram_mib / 1024.0]
    a_ub = coo_matrix((vals, (rows, cols)), shape=(2 * n_shapes + 1, n_vars)).tocsr()
    b_ub = np.zeros(2 * n_shapes + 1)
    b_ub[2 * n_shapes] = -1.0
    a_eq = coo_matrix(([1.0] * len(pairs), ([g for g, _ in pairs], [n_shapes + k for k in range(len(pairs))])),
                      shape=(len(keys), n_vars)).tocsr()
    b_eq = np.array([float(groups[k]) for k in keys])
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"per-task LP failed: {res.message}")
    return float(res.fun)
