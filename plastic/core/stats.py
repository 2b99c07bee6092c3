"""Pure statistics over runtime history (no I/O)."""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) with linear interpolation between closest ranks.

    The same definition as numpy's default (``method="linear"``): rank ``(n - 1) * q / 100``
    into the sorted values.  Raises ValueError for no values or q outside [0, 100].
    """
    xs = sorted(float(v) for v in values)
    if not xs:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0 or math.isnan(q):
        raise ValueError(f"percentile q={q} is outside [0, 100]")
    rank = (len(xs) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(xs) - 1)
    return xs[low] + (xs[high] - xs[low]) * (rank - low)
