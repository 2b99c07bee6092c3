"""Runtime estimates for notice decisions: learnt from this run's records, preloaded from Redis history."""

from __future__ import annotations

import time

import pytest

from plastic.framework.runtimes import RuntimeEstimates


def test_learns_finished_wall_times_per_tool():
    est = RuntimeEstimates(q=90.0)
    assert est.estimate("plastic_sort") is None and est.estimate(None) is None
    for job, wall in enumerate([10.0, 20.0, 30.0]):
        est.record("issued", {"job_id": str(job), "tool": "plastic_sort"})
        est.record("ended", {"job_id": str(job), "outcome": "finished", "wall_time_s": wall})
    est.record("issued", {"job_id": "9", "tool": "plastic_sort"})
    est.record("ended", {"job_id": "9", "outcome": "failed", "wall_time_s": 999.0})  # failures teach nothing
    assert est.estimate("plastic_sort") == pytest.approx(28.0)  # p90 of 10, 20, 30
    assert est.estimate("plastic_merge") is None


def test_preloads_history_from_redis(store):
    for seconds in (100.0, 110.0, 120.0):
        store.record_runtime("plastic_align", seconds)
    est = RuntimeEstimates(store, q=50.0)
    try:
        est.record("issued", {"job_id": "1", "tool": "plastic_align"})
        deadline = time.monotonic() + 5
        while est.estimate("plastic_align") is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert est.estimate("plastic_align") == pytest.approx(110.0)
    finally:
        est.close()


def test_redis_gone_leaves_this_runs_values(redis_server, tmp_path):
    from plastic.store import Store, start_embedded

    server = start_embedded(tmp_path / "r")
    client = server.client()
    store = Store(client, prefix="gone:")
    server.stop()
    est = RuntimeEstimates(store)
    try:
        est.record("issued", {"job_id": "1", "tool": "t"})
        est.record("ended", {"job_id": "1", "outcome": "finished", "wall_time_s": 5.0})
        time.sleep(0.3)
        assert est.estimate("t") == pytest.approx(5.0)
    finally:
        est.close()
        client.close()
