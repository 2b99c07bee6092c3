"""Event streams: append, read since an id, blocking read (what `plastic logs -f` does), capping."""

from __future__ import annotations

import threading
import time

from plastic.store import Store
from tests.store.helpers import blocked_in
from tests.waiting import eventually


def test_append_and_read_since(store, run_id):
    start = store.read_events(run_id)[-1].id  # run_created
    ids = [store.append_event(run_id, "placed", {"task": f"t{i}", "agent": "a1", "cpus": 2}) for i in range(3)]
    events = store.read_events(run_id, since=start)
    assert [e.id for e in events] == ids
    assert events[0].type == "placed" and events[0].fields == {"task": "t0", "agent": "a1", "cpus": "2"}
    assert events[0].at > 0
    assert [e.id for e in store.read_events(run_id, since=ids[0])] == ids[1:]
    assert store.read_events(run_id, since=ids[-1]) == []
    assert len(store.read_events(run_id, count=2)) == 2


def test_last_events_are_the_newest_oldest_first(store, run_id):
    ids = [store.append_event(run_id, "placed", {"task": f"t{i}"}) for i in range(5)]
    assert [e.id for e in store.last_events(run_id, 3)] == ids[2:]
    assert [e.fields["task"] for e in store.last_events(run_id, 2)] == ["t3", "t4"]
    assert [e.type for e in store.last_events(run_id, 100)][:1] == ["run_created"]
    assert store.last_events("r-none", 3) == []


def test_streams_are_per_run(store, run_id):
    other = store.create_run()
    store.append_event(run_id, "declined")
    assert [e.type for e in store.read_events(other)] == ["run_created"]
    assert store.read_events(None) == []
    store.append_event(None, "service_started")
    assert [e.type for e in store.read_events(None)] == ["service_started"]


def test_blocking_read_wakes_on_a_new_event(store, run_id):
    last = store.read_events(run_id)[-1].id

    def later() -> None:
        time.sleep(0.2)
        store.append_event(run_id, "notice", {"agent": "s0"})

    writer = threading.Thread(target=later)
    started = time.monotonic()
    writer.start()
    events = store.read_events(run_id, since=last, block_ms=5000)
    waited = time.monotonic() - started
    writer.join()
    assert [e.type for e in events] == ["notice"]
    assert 0.15 < waited < 3


def test_blocking_read_times_out_empty(store, run_id):
    last = store.read_events(run_id)[-1].id
    started = time.monotonic()
    assert store.read_events(run_id, since=last, block_ms=150) == []
    assert time.monotonic() - started >= 0.14


def test_follow_from_now(store, run_id, client):
    got = []
    reader = threading.Thread(target=lambda: got.extend(store.read_events(run_id, since="$", block_ms=5000)))
    before = blocked_in(client, "xread")
    reader.start()
    eventually(lambda: blocked_in(client, "xread") > before, 5, "the reader blocked in XREAD from $")
    store.append_event(run_id, "requeue")
    reader.join()
    assert [e.type for e in got] == ["requeue"]


def test_streams_are_capped(client, prefix):
    store = Store(client, prefix=prefix, events_maxlen=50)
    run_id = store.create_run()
    pipe = store.pipeline(transaction=False)
    for i in range(2000):
        store.append_event(run_id, "tick", {"i": i}, pipeline=pipe)
    store.execute(pipe)
    length = client.xlen(store.keys.events(run_id))
    assert 50 <= length < 300  # MAXLEN ~ trims whole macro nodes
    assert store.read_events(run_id)[-1].fields["i"] == "1999"
