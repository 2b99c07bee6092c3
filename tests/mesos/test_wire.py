"""The event stream as a real Mesos 1.11.1 master sent it: chunked HTTP + RecordIO."""

from __future__ import annotations

import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.mesos import calls
from plastic.mesos.connection import (
    JSON_HEADERS,
    SCHEDULER_PATH,
    HttpStream,
    StreamClosed,
    StreamTimeout,
)
from plastic.mesos.events import decode_event
from plastic.mesos.recordio import Decoder

from . import transcripts
from .replay import ReplayServer, ok_headers, plain, replay_reads

MAIN_STREAM = "08_SUBSCRIBE_stream.txt"
SUBSCRIBE = calls.encode(calls.subscribe({"name": "t", "user": "u"}))


def _recorded_body(name: str) -> tuple[dict[str, str], bytes]:
    wire = transcripts.stream(name).wire
    head, _, body = wire.partition(b"\r\n\r\n")
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return headers, body


def test_recorded_stream_decodes_to_the_recorded_events():
    headers, body = _recorded_body(MAIN_STREAM)
    assert headers["transfer-encoding"] == "chunked"
    assert headers["mesos-stream-id"] == "c856a2d7-34c6-4e54-8dae-fc4e86b795bd"
    decoder = Decoder()
    decoded = []
    for chunk in transcripts.dechunk(body):
        records = decoder.feed(chunk)
        assert len(records) == 1, "Mesos 1.11 writes one RecordIO record per chunk"
        decoded.append(decode_event(records[0]))
    assert decoder.idle
    expected = transcripts.events("08_SUBSCRIBE_stream.events.jsonl")
    assert decoded == expected
    kinds = {e["type"] for e in decoded}
    assert {"SUBSCRIBED", "HEARTBEAT", "OFFERS", "UPDATE", "RESCIND", "FAILURE"} <= kinds


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=700), min_size=1, max_size=60))
def test_recordio_records_split_anywhere(cuts):
    _, body = _recorded_body(MAIN_STREAM)
    payload = b"".join(transcripts.dechunk(body))
    decoder = Decoder()
    out, pos, i = [], 0, 0
    while pos < len(payload):
        step = cuts[i % len(cuts)]
        out += decoder.feed(payload[pos: pos + step])
        pos += step
        i += 1
    assert [decode_event(r) for r in out] == transcripts.events("08_SUBSCRIBE_stream.events.jsonl")


def test_http_stream_reads_the_recorded_bytes_and_sends_the_recorded_request():
    recorded = transcripts.stream(MAIN_STREAM)
    framework_info = {
        "user": "root",
        "name": "transcript-fw",
        "failover_timeout": 3600.0,
        "checkpoint": True,
        "capabilities": [{"type": "PARTITION_AWARE"}, {"type": "TASK_KILLING_STATE"}],
    }
    body = calls.encode(calls.subscribe(framework_info))
    with ReplayServer([replay_reads(recorded.reads)]) as server:
        stream = HttpStream(server.url + SCHEDULER_PATH, body, JSON_HEADERS, response_timeout_s=5)
        stream.open()
        assert stream.status == 200
        assert stream.headers["mesos-stream-id"] == "c856a2d7-34c6-4e54-8dae-fc4e86b795bd"
        chunks = list(stream.iter_body())
        assert stream.ended_cleanly
        stream.close()
        (req,) = server.subscribes()
    _, recorded_body = _recorded_body(MAIN_STREAM)
    assert chunks == transcripts.dechunk(recorded_body)
    # The request: same body bytes, same headers as the recorded scheduler sent.
    exact = recorded.request
    _head, _, recorded_request_body = exact.partition(b"\r\n\r\n")
    assert req.body == recorded_request_body == body
    assert req.method == "POST" and req.path == SCHEDULER_PATH
    assert req.headers["content-type"] == "application/json"
    assert req.headers["accept"] == "application/json"
    assert req.headers["content-length"] == str(len(body))
    assert "mesos-stream-id" not in req.headers  # a SUBSCRIBE must not carry one (transcript 50)


def test_http_stream_read_timeout_is_the_watchdog():
    def silent(conn, _req):
        conn.send(ok_headers())
        conn.hold(5)

    with ReplayServer([silent]) as server:
        stream = HttpStream(server.url + SCHEDULER_PATH, SUBSCRIBE, JSON_HEADERS, response_timeout_s=5)
        stream.open()
        assert stream.status == 200 and stream.chunked
        stream.set_read_timeout(0.2)
        t0 = time.monotonic()
        try:
            list(stream.iter_body())
            raise AssertionError("expected a timeout")
        except StreamTimeout:
            pass
        assert 0.15 < time.monotonic() - t0 < 2
        stream.close()


def test_http_stream_abort_wakes_a_blocked_reader():
    def silent(conn, _req):
        conn.send(ok_headers())
        conn.hold(5)

    with ReplayServer([silent]) as server:
        stream = HttpStream(server.url + SCHEDULER_PATH, SUBSCRIBE, JSON_HEADERS, response_timeout_s=5)
        stream.open()
        stream.set_read_timeout(None)
        threading.Timer(0.1, stream.abort).start()
        t0 = time.monotonic()
        try:
            list(stream.iter_body())
            raise AssertionError("expected the stream to close")
        except StreamClosed:
            pass
        assert time.monotonic() - t0 < 2
        stream.close()


def test_http_stream_error_answer_body():
    exchange = transcripts.exchange("10_ERR_missing_stream_id_REVIVE.txt")

    def refuse(conn, _req):
        conn.send(plain(400, "Bad Request", exchange.response_body.decode()))

    with ReplayServer([refuse]) as server:
        stream = HttpStream(server.url + SCHEDULER_PATH, calls.encode(calls.subscribe({"name": "x"})), JSON_HEADERS)
        stream.open()
        assert stream.status == 400
        assert stream.read_body() == b"All non-subscribe calls should include the 'Mesos-Stream-Id' header"
        stream.close()
