"""Runtime history per tool: capped, newest first, percentiles."""

from __future__ import annotations

import pytest

from plastic.store import Store


def test_history_and_percentiles(store):
    assert store.runtime_history("align") == []
    assert store.runtime_percentile("align", 90) is None
    for seconds in (10, 20, 30, 40, 50):
        store.record_runtime("align", seconds)
    store.record_runtime("sort", 1.25)
    assert store.runtime_history("align") == [50.0, 40.0, 30.0, 20.0, 10.0]
    assert store.runtime_history("align", limit=2) == [50.0, 40.0]
    assert store.runtime_history("sort") == [1.25]
    assert store.runtime_percentile("align", 50) == 30.0
    assert store.runtime_percentile("align", 90) == pytest.approx(46.0)


def test_history_is_capped_to_the_newest(client, prefix):
    store = Store(client, prefix=prefix, runtime_cap=5)
    for seconds in range(12):
        store.record_runtime("tool#main/step", seconds)
    assert store.runtime_history("tool#main/step") == [11.0, 10.0, 9.0, 8.0, 7.0]


def test_record_runtime_in_a_pipeline(store):
    pipe = store.pipeline()
    store.record_runtime("x", 1.0, pipeline=pipe)
    store.record_runtime("x", 2.0, pipeline=pipe)
    assert store.runtime_history("x") == []
    store.execute(pipe)
    assert store.runtime_history("x") == [2.0, 1.0]
