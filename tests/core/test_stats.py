"""The pure percentile helper against numpy's definition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from plastic.core.stats import percentile


def test_simple_values():
    assert percentile([5.0], 50) == 5.0
    assert percentile([1, 2, 3, 4], 0) == 1
    assert percentile([1, 2, 3, 4], 100) == 4
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([4, 1, 3, 2], 25) == pytest.approx(1.75)


@pytest.mark.parametrize("q", [-1, 100.5, float("nan")])
def test_bad_q(q):
    with pytest.raises(ValueError):
        percentile([1.0], q)


def test_no_values():
    with pytest.raises(ValueError):
        percentile([], 50)


@given(
    st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=50),
    st.floats(min_value=0, max_value=100),
)
def test_matches_numpy_linear(values, q):
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-9)
