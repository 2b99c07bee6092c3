"""The submissions queue of `plastic serve`: FIFO, blocking pop with a timeout."""

from __future__ import annotations

import threading
import time

import pytest

from tests.store.helpers import blocked_in
from tests.waiting import eventually


def test_fifo(store):
    assert store.pop_submission() is None
    for i in range(3):
        store.push_submission({"workflow": f"wf{i}.cwl", "job": "job.yml"})
    assert store.pending_submissions() == 3
    assert [store.pop_submission()["workflow"] for _ in range(3)] == ["wf0.cwl", "wf1.cwl", "wf2.cwl"]
    assert store.pending_submissions() == 0


def test_blocking_pop_times_out(store):
    started = time.monotonic()
    assert store.pop_submission(timeout=0.2) is None
    assert 0.15 <= time.monotonic() - started < 3


def test_blocking_pop_wakes_on_push(store, client):
    before = blocked_in(client, "brpop")

    def push_once_the_pop_waits() -> None:
        eventually(lambda: blocked_in(client, "brpop") > before, 5, "the pop blocked in BRPOP")
        store.push_submission({"run": "r1"})

    pusher = threading.Thread(target=push_once_the_pop_waits)
    pusher.start()
    started = time.monotonic()
    assert store.pop_submission(timeout=5) == {"run": "r1"}
    assert time.monotonic() - started < 3
    pusher.join(5)


def test_zero_timeout_is_refused(store):
    with pytest.raises(ValueError):
        store.pop_submission(timeout=0)
