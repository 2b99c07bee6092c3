"""StoreWriter against real Redis servers: order, batching, refusals logged, outages survived, bounded close."""

from __future__ import annotations

import logging
import time

from plastic.framework.store_writer import StoreWriter, Write
from plastic.store import Store, start_embedded
from tests.waiting import eventually


def event(run_id, n):
    return Write(f"event {n}", "append_event", (run_id, "e", {"n": n}))


def test_writes_in_order_and_batched(store, run_id):
    w = StoreWriter(store, batch_max=7)
    try:
        w.submit(event(run_id, n) for n in range(50))
        assert w.flush(10)
    finally:
        w.close(5)
    got = [int(e.fields["n"]) for e in store.read_events(run_id) if e.type == "e"]
    assert got == list(range(50))
    assert (w.written, w.refused, w.dropped) == (50, 0, 0)


def test_refusal_is_logged_and_the_batch_stands(store, run_id, caplog):
    w = StoreWriter(store)
    caplog.set_level(logging.ERROR, logger="plastic.framework.store_writer")
    try:
        w.submit([Write("add", "add_tasks", (run_id, {"1": {}})),
                  Write("bad move", "transition_task", (run_id, "1", "RUNNING")),  # QUEUED -> RUNNING: refused
                  Write("unknown", "transition_task", (run_id, "nope", "LAUNCHING")),
                  Write("bad args", "transition_task", (run_id, "1", "NOT_A_STATE")),
                  Write("good move", "transition_task", (run_id, "1", "LAUNCHING"), {"expected": "QUEUED"}),
                  event(run_id, 1)])
        assert w.flush(10)
    finally:
        w.close(5)
    assert store.get_task(run_id, "1").state == "LAUNCHING"
    assert (w.written, w.refused, w.dropped) == (3, 2, 1)
    text = caplog.text
    assert "Redis refused bad move" in text and "QUEUED -> RUNNING is not allowed" in text
    assert "Redis refused unknown" in text and "not sent" in text


def test_outage_is_logged_retried_and_close_is_bounded(tmp_path, caplog):
    server = start_embedded(tmp_path / "r")
    client = server.client(socket_timeout=2, socket_connect_timeout=2)
    store = Store(client)
    run_id = store.create_run()
    w = StoreWriter(store, retry_max_s=0.5)
    caplog.set_level(logging.WARNING, logger="plastic.framework.store_writer")
    try:
        w.submit([event(run_id, 0)])
        assert w.flush(10)
        server.stop()
        w.submit([event(run_id, 1), event(run_id, 2)])
        eventually(lambda: "Redis unreachable" in caplog.text, 15, "the writer to log the outage",
                   describe=lambda: caplog.text)
        assert not w.flush(0.1)
        server = start_embedded(tmp_path / "r")  # same directory: same socket, the AOF replayed
        assert w.flush(15)
        assert "reachable again" in caplog.text
        assert [e.fields["n"] for e in store.read_events(run_id) if e.type == "e"] == ["0", "1", "2"]
        server.stop()
        w.submit([event(run_id, 3)])
        t0 = time.monotonic()
        w.close(1.0)
        assert time.monotonic() - t0 < 4
        assert w.dropped == 1 and "dropped at close" in caplog.text
    finally:
        w.close(0.1)
        client.close()
        server.stop()


def test_full_queue_drops_without_blocking(store, run_id, caplog):
    w = StoreWriter(store, queue_max=1)
    try:
        w.submit(event(run_id, n) for n in range(200))  # never blocks, whatever the thread manages
        assert w.flush(10)
    finally:
        w.close(5)
    assert w.written + w.dropped == 200
