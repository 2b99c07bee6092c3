"""An instance-metadata emulator for one spot agent, on its own (`plastic imds serve`).

The local cluster serves one IMDS per spot agent inside its own process (plastic.local.instance_metadata); a
Mesos agent started any other way (the compose cluster, a laptop) gets the same endpoint from this
server, plus two control calls:

    POST /plastic/interrupt  {"notice_seconds": 120, "rebalance_only": false}
                              a rebalance recommendation now and, unless rebalance_only, the
                              instance-action (terminate) notice for now + notice_seconds
    GET  /plastic/state       {"instance_id", "instance_type", "action_time", "rebalance_time", "reads"}
                              (reads: meta-data path -> the GETs of it so far, with a valid token)

What happens at the action time is up to whoever runs the agent: `plastic spot-run` kills it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from plastic.local.instance_metadata import InstanceMetadata


@dataclass
class Schedule:
    """The interruption this instance is to get (epoch seconds), if any."""

    action_time: float | None = None
    rebalance_time: float | None = None

    def interrupt(self, notice_s: float, now: float, *, rebalance_only: bool) -> None:
        if self.rebalance_time is None:
            self.rebalance_time = now
        if not rebalance_only and self.action_time is None:
            # whole seconds, rounded up: the notice shows the time to the second (as EC2's does), and a
            # machine that goes at the time it read must not go before now + notice_s
            self.action_time = float(math.ceil(now + max(0.0, notice_s)))


def make_app(instance_id: str, instance_type: str, *, clock: Callable[[], float] = time.time) -> web.Application:
    schedule = Schedule()
    meta = InstanceMetadata(instance_id, instance_type, lambda: (schedule.action_time, schedule.rebalance_time),
                            clock=clock)
    app = meta.app()

    async def interrupt(request: web.Request) -> web.Response:
        try:
            body = await request.json() if request.can_read_body else {}
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
            notice_s = float(body.get("notice_seconds", INTERRUPTION_NOTICE_S))
            if notice_s < 0:
                raise ValueError("notice_seconds must be >= 0")
            rebalance_only = bool(body.get("rebalance_only", False))
        except (ValueError, TypeError, json.JSONDecodeError) as exc:
            return web.json_response({"error": f"bad interrupt call: {exc}"}, status=400)
        schedule.interrupt(notice_s, clock(), rebalance_only=rebalance_only)
        return web.json_response(state_of())

    def state_of() -> dict:
        return {"instance_id": instance_id, "instance_type": instance_type,
                "action_time": schedule.action_time, "rebalance_time": schedule.rebalance_time,
                "reads": dict(meta.reads)}

    async def state(_request: web.Request) -> web.Response:
        return web.json_response(state_of())

    app.router.add_post("/plastic/interrupt", interrupt)
    app.router.add_get("/plastic/state", state)
    return app


def serve(host: str, port: int, instance_id: str, instance_type: str) -> None:
    """Serve until SIGINT/SIGTERM."""
    web.run_app(make_app(instance_id, instance_type), host=host, port=port, print=None, handle_signals=True)
