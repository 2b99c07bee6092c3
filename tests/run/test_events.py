"""EventFollower (plastic.run.events) against a real Redis: one batch per poll, however long the
backlog, and drain reads the rest in order without holding it all."""

from __future__ import annotations

import uuid

from plastic.run.events import EventFollower
from plastic.store import Store


def test_a_long_backlog_is_read_a_batch_at_a_time_in_order(client):
    store = Store(client, prefix=f"t-{uuid.uuid4().hex[:12]}:")
    run_id = store.create_run(fields={"workflow": "wf.cwl"})
    pipe = client.pipeline(transaction=False)
    for i in range(2500):
        store.append_event(run_id, "placed", {"job_id": str(i), "agent_id": "a1", "cpus": 2}, pipeline=pipe)
    pipe.execute()
    follower = EventFollower(store, run_id)
    sizes = [len(follower.poll(count=1000)) for _ in range(4)]
    assert sizes == [1000, 1000, 501, 0]  # run_created, then the 2,500
    store.append_event(run_id, "ended", {"job_id": "7", "outcome": "finished"})
    (last,) = follower.poll(count=1000)
    assert last.kind == "ended" and last.fields == {"job_id": "7", "outcome": "finished"}  # as the stream has them
    assert (last.record.job_id, last.record.outcome) == ("7", "finished")  # read as JobEnded declares them

    again = EventFollower(store, run_id)
    drained = again.drain(wait_s=0, count=300)
    first = next(drained)
    assert first.kind == "run_created"
    assert again.last_id != "0-0"  # a batch read, not the whole stream
    rest = list(drained)
    assert [e.record.job_id for e in rest[:-1]] == [str(i) for i in range(2500)]
    assert rest[-1].kind == "ended" and list(again.drain(wait_s=0)) == []


def test_drain_gives_up_when_redis_stays_away(tmp_path):
    from plastic.store.embedded import start_embedded

    server = start_embedded(tmp_path / "redis")
    conn = server.client()
    store = Store(conn)
    run_id = store.create_run()
    follower = EventFollower(store, run_id)
    assert [e.kind for e in follower.drain(wait_s=0)] == ["run_created"]
    server.stop()
    assert list(follower.drain(wait_s=0.5)) == []
    assert follower.outages == 1 and not follower.reachable
    conn.close()
