"""Every error path of the recorded Mesos 1.11.1 transcripts, byte for byte where the bodies are fixed."""

from __future__ import annotations

import json

from tests.local.rawmesos import raw_request, subscribe_body
from tests.waiting import eventually

JSON = ("Content-Type", "application/json")
ACCEPT = ("Accept", "application/json")
TEXT = "text/plain; charset=utf-8"


def post(cluster, body, headers=(JSON, ACCEPT), path="/api/v1/scheduler"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return raw_request(cluster.master_url, "POST", path, data, list(headers))


def test_version_like_a_real_master(cluster):
    status, headers, body = raw_request(cluster.master_url, "GET", "/version", headers=[("Accept", "*/*")])
    assert status == 200 and headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["version"] == "1.11.1"
    assert {"build_date", "build_time", "build_user"} <= set(doc)


def test_get_instead_of_post_is_405(cluster):  # transcript 02
    status, headers, body = raw_request(cluster.master_url, "GET", "/api/v1/scheduler", headers=[ACCEPT])
    assert status == 405
    assert headers["allow"] == "POST" and headers["content-type"] == TEXT
    assert body == b"405 Method Not Allowed. Expecting one of { 'POST' }, but received 'GET'."


def test_bad_json_is_400(cluster):  # transcript 03
    status, headers, body = post(cluster, b'{"type": "SUBSCRIBE", "subscribe": {')
    assert status == 400 and headers["content-type"] == TEXT
    assert body == b"Failed to parse body into JSON: syntax error at line 1 near: "


def test_unknown_framework_is_400(cluster):  # transcript 04
    status, _, body = post(cluster, {"framework_id": {"value": "00000000-0000-0000-0000-000000000000-0000"},
                                     "type": "REVIVE"})
    assert (status, body) == (400, b"Framework cannot be found")


def test_missing_content_type_is_400(cluster):  # transcript 05
    status, _, body = post(cluster, {"type": "SUBSCRIBE"}, headers=[ACCEPT])
    assert (status, body) == (400, b"Expecting 'Content-Type' to be present")


def test_text_plain_content_type_is_415(cluster):  # transcript 49
    status, headers, body = post(cluster, subscribe_body(), headers=[("Content-Type", "text/plain"), ACCEPT])
    assert status == 415 and headers["content-type"] == TEXT
    assert body == b"Expecting 'Content-Type' of application/json or application/x-protobuf"


def test_subscribe_without_subscribe_is_400_even_with_bad_accept(cluster):  # transcripts 06 and 07
    for headers in ([JSON, ACCEPT], [JSON, ACCEPT, ("Accept", "text/html")]):
        status, _, body = post(cluster, {"type": "SUBSCRIBE"}, headers=headers)
        assert (status, body) == (400, b"Failed to validate scheduler::Call: Expecting 'subscribe' to be present")


def test_accept_text_html_on_valid_subscribe_is_406(cluster):  # transcript 48: the last Accept header counts
    status, headers, body = post(cluster, subscribe_body(), headers=[JSON, ACCEPT, ("Accept", "text/html")])
    assert status == 406 and headers["content-type"] == TEXT
    assert body == b"Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'"


def test_subscribe_with_stream_id_header_is_400(cluster):  # transcript 50
    status, _, body = post(cluster, subscribe_body(),
                           headers=[JSON, ACCEPT, ("Mesos-Stream-Id", "11111111-2222-3333-4444-555555555555")])
    assert (status, body) == (400, b"Subscribe calls should not include the 'Mesos-Stream-Id' header")


def test_stream_id_checks(cluster, scheduler):  # transcripts 09, 10, 11
    s = scheduler(cluster.master_url)
    revive = {"framework_id": {"value": s.framework_id}, "type": "REVIVE"}
    wrong = ("Mesos-Stream-Id", "a2eb6487-2756-4a87-8924-62affed2d56e")
    status, _, body = post(cluster, revive, headers=[JSON, ACCEPT, wrong])
    assert status == 400
    assert body.decode() == ("The stream ID 'a2eb6487-2756-4a87-8924-62affed2d56e' included in this request didn't "
                             f"match the stream ID currently associated with framework ID {s.framework_id}")
    status, _, body = post(cluster, revive)
    assert (status, body) == (400, b"All non-subscribe calls should include the 'Mesos-Stream-Id' header")
    status, _, body = post(cluster, {"type": "REVIVE"}, headers=[JSON, ACCEPT, ("Mesos-Stream-Id", s.stream_id)])
    assert (status, body) == (400, b"Failed to validate scheduler::Call: Expecting 'framework_id' to be present")
    status, headers, body = post(cluster, revive, headers=[JSON, ACCEPT, ("Mesos-Stream-Id", s.stream_id)])
    assert (status, body) == (202, b"") and headers["content-length"] == "0"
    assert "content-type" not in headers and "server" not in headers


def test_calls_after_teardown_are_400(cluster, scheduler):  # transcripts 46, 47
    s = scheduler(cluster.master_url)
    assert s.call("TEARDOWN").status_code == 202
    s.wait(lambda: s.ended, what="the end of the stream")
    resp = s.call("REVIVE")
    assert (resp.status_code, resp.text) == (400, "Framework cannot be found")
    assert not any(e["type"] == "ERROR" for e in s.events)  # TEARDOWN sends no event


def test_disconnected_framework_is_403_and_old_stream_id_400(cluster, scheduler):  # transcripts 56, 57
    a = scheduler(cluster.master_url, failover_timeout=60.0)
    b = scheduler(cluster.master_url, framework_id=a.framework_id, failover_timeout=60.0)
    a.wait(lambda: a.ended, what="A's stream end")
    revive = {"framework_id": {"value": a.framework_id}, "type": "REVIVE"}
    status, _, body = post(cluster, revive, headers=[JSON, ACCEPT, ("Mesos-Stream-Id", a.stream_id)])
    assert status == 400 and b"didn't match the stream ID currently associated" in body
    b.close()

    def forbidden():
        status, _, body = post(cluster, revive, headers=[JSON, ACCEPT, ("Mesos-Stream-Id", b.stream_id)])
        return (status, body) if status == 403 else None

    assert eventually(forbidden, timeout=5, what="403") == (403, b"Framework is not subscribed")


def test_unknown_call_type_and_missing_payloads(cluster, scheduler):
    s = scheduler(cluster.master_url)
    resp = s.call("BOGUS")
    assert resp.status_code == 400 and "Failed to find enum for 'BOGUS'" in resp.text
    resp = s.call("KILL")
    assert (resp.status_code, resp.text) == (400, "Failed to validate scheduler::Call: Expecting 'kill' to be present")
    resp = s.call("ACKNOWLEDGE", acknowledge={"agent_id": {"value": "a"}, "task_id": {"value": "t"},
                                              "uuid": "bm90LWEtdXVpZA=="})
    assert resp.status_code == 400 and "Not a valid UUID" in resp.text
    status, _, body = post(cluster, {"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": "root"}}})
    assert status == 400 and b"Missing required fields: subscribe.framework_info.name" in body


def test_operator_api_errors(cluster):
    status, headers, _ = raw_request(cluster.master_url, "GET", "/api/v1")
    assert status == 405 and headers["allow"] == "POST"
    status, _, body = post(cluster, {"type": "DRAIN_AGENT", "drain_agent": {"agent_id": {"value": "nope"}}},
                           path="/api/v1")
    assert status == 400 and b"nope" in body
    status, _, _ = post(cluster, {"type": "GET_AGENTS"}, headers=[ACCEPT], path="/api/v1")
    assert status == 400
