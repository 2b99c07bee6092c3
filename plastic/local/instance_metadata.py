"""An EC2 instance-metadata service (IMDSv2) for one preemptible agent.

    PUT /latest/api/token          X-aws-ec2-metadata-token-ttl-seconds: 1..21600  -> token
    GET /latest/meta-data/spot/instance-action                 404 | {"action": "terminate", "time": ...}
    GET /latest/meta-data/spot/termination-time                404 | the same time, plain text
    GET /latest/meta-data/events/recommendations/rebalance     404 | {"noticeTime": ...}
    GET /latest/meta-data/instance-id, instance-type, placement/availability-zone, local-ipv4, hostname

Every GET needs a valid token in `X-aws-ec2-metadata-token` (401 otherwise),
as on an instance that requires IMDSv2.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

from aiohttp import web

log = logging.getLogger(__name__)

MAX_TTL = 21600


def iso_utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class InstanceMetadata:
    """The metadata of one instance; `notice()` reads the agent's interruption schedule."""

    def __init__(self, instance_id: str, instance_type: str, notice: Callable[[], tuple[float | None, float | None]],
                 *, clock: Callable[[], float] = time.time):
        self.instance_id = instance_id
        self.instance_type = instance_type
        self.notice = notice  # -> (instance-action time, rebalance notice time)
        self.clock = clock
        self.tokens: dict[str, float] = {}
        self.reads: Counter[str] = Counter()  # meta-data path -> GETs with a valid token (tests: how often polled)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("PUT", "/latest/api/token", self.put_token)
        app.router.add_route("GET", "/latest/meta-data/{path:.*}", self.get_meta)
        app.router.add_route("GET", "/latest/meta-data", self.get_meta)
        return app

    async def put_token(self, request: web.Request) -> web.Response:
        ttl_text = request.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        try:
            ttl = int(ttl_text) if ttl_text is not None else 0
        except ValueError:
            ttl = 0
        if not 1 <= ttl <= MAX_TTL:
            return web.Response(status=400, text="Bad Request")
        now = self.clock()
        self.tokens = {t: exp for t, exp in self.tokens.items() if exp > now}
        token = secrets.token_urlsafe(40)
        self.tokens[token] = now + ttl
        return web.Response(text=token, headers={"X-aws-ec2-metadata-token-ttl-seconds": str(ttl)})

    def _authorised(self, request: web.Request) -> bool:
        token = request.headers.get("X-aws-ec2-metadata-token")
        exp = self.tokens.get(token or "")
        return exp is not None and exp > self.clock()

    async def get_meta(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return web.Response(status=401, text="Unauthorized")
        path = request.match_info.get("path", "").strip("/")
        self.reads[path] += 1
        action_time, rebalance_time = self.notice()
        now = self.clock()
        if path == "spot/instance-action":
            if action_time is None:
                return _not_found()
            return _json({"action": "terminate", "time": iso_utc(action_time)})
        if path == "spot/termination-time":  # the older form of the same notice
            if action_time is None:
                return _not_found()
            return web.Response(text=iso_utc(action_time))
        if path == "events/recommendations/rebalance":
            if rebalance_time is None or rebalance_time > now:
                return _not_found()
            return _json({"noticeTime": iso_utc(rebalance_time)})
        static = {
            "instance-id": self.instance_id, "instance-type": self.instance_type,
            "instance-life-cycle": "spot", "local-ipv4": "127.0.0.1", "hostname": "localhost",
            "local-hostname": "localhost", "placement/availability-zone": "local-1a", "placement/region": "local-1",
            "ami-id": "ami-00000000000000000",
        }
        if path in static:
            return web.Response(text=static[path])
        if path == "":
            listing = sorted({p.split("/")[0] + ("/" if "/" in p else "") for p in static} | {"spot/", "events/"})
            return web.Response(text="\n".join(listing))
        if path == "spot":
            return web.Response(text="instance-action" if action_time is not None else "")
        return _not_found()


def _json(doc: dict) -> web.Response:
    return web.Response(text=json.dumps(doc), content_type="text/plain")


def _not_found() -> web.Response:
    body = ('<?xml version="1.0" encoding="iso-8859-1"?>\n<!DOCTYPE html>\n<html><head><title>404 - Not Found'
            '</title></head><body><h1>404 - Not Found</h1></body></html>\n')
    return web.Response(status=404, text=body, content_type="text/html")
