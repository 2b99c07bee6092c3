"""The IMDS client: notice documents, IMDSv2 tokens (against a LocalCluster agent's endpoint) and the
IMDSv1 fallback (against a small real HTTP server that refuses tokens)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from plastic.watch.imds_client import (
    ImdsClient,
    ImdsError,
    parse_instance_action,
    parse_rebalance,
    parse_time,
)
from tests.fakes.clock import Clock


def test_parsing_notice_documents():
    assert parse_time("2026-01-01T12:00:00Z") == 1767268800.0
    assert parse_time("2026-01-01T13:00:00.5+01:00") == 1767268800.5
    assert parse_time("2026-01-01T12:00:00") == 1767268800.0  # no zone: UTC
    a = parse_instance_action('{"action": "Hibernate", "time": "2026-01-01T12:00:00Z"}', now=0)
    assert (a.action, a.time, a.readable) == ("hibernate", 1767268800.0, True)
    broken = parse_instance_action("<html>", now=1000.0)  # there, but unreadable: still a notice
    assert (broken.action, broken.time, broken.readable) == ("unknown", 1120.0, False)
    assert parse_rebalance('{"noticeTime": "2026-01-01T12:00:00Z"}', now=0) == 1767268800.0
    assert parse_rebalance("{}", now=5.0) == 5.0


def test_v2_tokens_refreshed_before_they_expire(cluster):
    agent = cluster.agents[0]
    clock = Clock()
    imds = ImdsClient(agent.imds_url, token_ttl_s=2, clock=clock)  # refreshed 1 s before its end
    try:
        assert imds.instance_id() == agent.instance_id
        first = imds.token
        assert imds.get("spot/instance-action") is None and imds.token == first
        clock.advance(1.1)
        assert imds.instance_id() == agent.instance_id and imds.token not in (None, first)
        imds.token_expires = clock() + 100  # a token the server no longer accepts: 401, then a new one
        imds.token = "revoked"
        assert imds.instance_id() == agent.instance_id and imds.token != "revoked"
        with pytest.raises(ValueError):
            ImdsClient(agent.imds_url, token_ttl_s=0)
    finally:
        imds.close()


class _V1Only(BaseHTTPRequestHandler):
    """An IMDS with IMDSv2 turned off: PUT /latest/api/token -> 403; GETs need no token."""

    def do_PUT(self):
        self.send_response(403)
        self.end_headers()

    def do_GET(self):
        if self.path == "/latest/meta-data/spot/instance-action":
            body = json.dumps({"action": "stop", "time": "2026-01-01T12:00:00Z"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/latest/meta-data/broken":
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def log_message(self, *args):
        pass


def test_v1_fallback_when_tokens_are_refused():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _V1Only)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    imds = ImdsClient(f"http://127.0.0.1:{server.server_address[1]}")
    try:
        action = imds.instance_action(now=0.0)
        assert action is not None and (action.action, action.time) == ("stop", 1767268800.0)
        assert imds.v1_since is not None and imds.token is None
        assert imds.rebalance(now=0.0) is None
        with pytest.raises(ImdsError, match="HTTP 500"):
            imds.get("broken")
    finally:
        imds.close()
        server.shutdown()
        server.server_close()
