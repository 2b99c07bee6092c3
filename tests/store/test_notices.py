"""Spot notices in Redis: published once per (kind, target), read in order, followed with blocking reads."""

from __future__ import annotations

import threading

from plastic.store import Store
from tests.store.helpers import blocked_in
from tests.waiting import eventually


def test_a_notice_is_published_once(store: Store):
    first = store.publish_notice("terminate", "agent:a1", {"terminate_at": 1000.5, "source": "imds"})
    again = store.publish_notice("terminate", "agent:a1", {"terminate_at": 1000.5, "source": "sqs"})
    assert first is not None and again is None
    other_kind = store.publish_notice("rebalance", "agent:a1", {"source": "imds"})
    other_agent = store.publish_notice("terminate", "agent:a2", {"terminate_at": 1001})
    assert other_kind and other_agent
    notices = store.read_notices()
    assert [(n.fields["kind"], n.fields["target"]) for n in notices] == [
        ("terminate", "agent:a1"), ("rebalance", "agent:a1"), ("terminate", "agent:a2")]
    assert notices[0].fields["source"] == "imds" and float(notices[0].fields["terminate_at"]) == 1000.5
    assert float(notices[0].fields["published_at"]) > 0
    assert store.read_notices(notices[-1].id) == []


def test_racing_publishers_publish_once(store: Store):
    ids: list[str | None] = []
    lock = threading.Lock()

    def publish():
        got = store.publish_notice("terminate", "instance:i-0abc", {"source": "race"})
        with lock:
            ids.append(got)

    threads = [threading.Thread(target=publish) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for i in ids if i) == 1
    assert len(store.read_notices()) == 1


def test_follow_with_a_blocking_read(store: Store, client):
    found: list = []
    reader = threading.Thread(target=lambda: found.extend(store.read_notices("$", block_ms=5000)))
    before = blocked_in(client, "xread")
    reader.start()
    eventually(lambda: blocked_in(client, "xread") > before, 5, "the reader blocked in XREAD from $")
    store.publish_notice("terminate", "agent:late", {})
    reader.join(6)
    assert [n.fields["target"] for n in found] == ["agent:late"]
