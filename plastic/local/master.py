"""The master's HTTP endpoints: the v1 scheduler API, the operator API, /version, and plastic's admin calls.

    POST /api/v1/scheduler   SUBSCRIBE (200, chunked RecordIO stream) and every other call (202, empty)
    POST /api/v1             GET_AGENTS, GET_TASKS, GET_FRAMEWORKS, GET_HEALTH, GET_VERSION,
                             DRAIN_AGENT, DEACTIVATE_AGENT, REACTIVATE_AGENT
    GET  /version            like a 1.11.1 master, plus a field naming the emulation
    GET  /plastic/status     agents, resources, tasks, frameworks, interruptions (JSON)
    POST /plastic/interrupt  {"agent_id" | "cluster", "notice_seconds", "rebalance_only"}
    POST /plastic/kill-agent {"agent_id"}  -> {"killed", "tasks": the ids it was running}
    GET  /plastic/sandbox?task_id=..[&framework_id=..]
    POST /plastic/shutdown
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any

from aiohttp import web

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from plastic.local import calls, views
from plastic.local import protocol as P
from plastic.local.streams import Stream, frame
from plastic.mesos.credential import REALM, authenticated_principal

RunningCluster = Any  # plastic.local.cluster.RunningCluster (not imported: the cluster imports this module)

log = logging.getLogger(__name__)

BUILD_TIME = 1767225600.0  # 2026-01-01: a fixed build stamp for the emulated master
TEXT = "text/plain"


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=message, content_type=TEXT, charset="utf-8", headers=headers)


def _json(doc: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=json.dumps(doc, separators=(",", ":")).encode(),
                        content_type="application/json")


def _method_not_allowed(request: web.Request) -> web.Response:
    return _error(405, f"405 Method Not Allowed. Expecting one of {{ 'POST' }}, but received '{request.method}'.",
                  headers={"Allow": "POST"})


async def _read_call(request: web.Request) -> Any:
    calls.check_content_type(request.headers.get("Content-Type"))
    return calls.parse_json(await request.read())


def make_app(cluster: RunningCluster) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app["cluster"] = cluster
    app.on_response_prepare.append(_strip_server_header)
    app.router.add_route("*", "/api/v1/scheduler", scheduler)
    app.router.add_route("*", "/api/v1", operator)
    app.router.add_route("*", "/api/v1/", operator)
    app.router.add_get("/version", version)
    app.router.add_get("/health", health)
    app.router.add_get("/master/health", health)
    app.router.add_get("/plastic/status", plastic_status)
    app.router.add_get("/plastic/sandbox", plastic_sandbox)
    app.router.add_post("/plastic/interrupt", plastic_interrupt)
    app.router.add_post("/plastic/kill-agent", plastic_kill_agent)
    app.router.add_post("/plastic/restart-agent", plastic_restart_agent)
    app.router.add_post("/plastic/shutdown", plastic_shutdown)
    app.router.add_route("*", "/plastic/v1/agents", plastic_agents)
    app.router.add_route("*", "/plastic/v1/agents/{agent_id}", plastic_agent)
    return app


async def _strip_server_header(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.popall("Server", None)  # a real master names no server


def _cluster(request: web.Request) -> RunningCluster:
    return request.app["cluster"]


# ==================================================================== scheduler API
def _unauthorized() -> web.Response:
    return _error(401, "401 Unauthorized.", headers={"WWW-Authenticate": f'Basic realm="{REALM}"'})


async def scheduler(request: web.Request) -> web.StreamResponse:
    cluster = _cluster(request)
    principal = None
    if cluster.options.credentials:  # as Mesos' --authenticate_http_frameworks: checked before anything else
        principal = authenticated_principal(request.headers.get("Authorization"), cluster.options.credentials)
        if principal is None:
            return _unauthorized()
    if request.method != "POST":
        return _method_not_allowed(request)
    state = cluster.state
    assert state is not None
    try:
        call = calls.validate_call(await _read_call(request))
        stream_header = request.headers.get("Mesos-Stream-Id")
        if call["type"] == "SUBSCRIBE" and principal is not None:
            info = call["subscribe"]["framework_info"]
            if info.get("principal") not in (None, principal):
                raise P.CallError(400, f"Failed to validate scheduler::Call: Authenticated principal '{principal}' "
                                       f"does not match principal '{info['principal']}' set in `FrameworkInfo`")
            info["principal"] = principal
        if call["type"] == "SUBSCRIBE":
            if not calls.accepts_json(request.headers.getall("Accept", [])):
                raise P.CallError(406, "Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'")
            if stream_header is not None:
                raise P.CallError(400, "Subscribe calls should not include the 'Mesos-Stream-Id' header")
            return await _subscribe(request, cluster, call)
        fw = state.check_call(call["framework_id"]["value"], stream_header)
        cluster.apply(calls.apply_call(state, fw, call, time.time()))
    except P.CallError as exc:
        return _error(exc.status, exc.message)
    return web.Response(status=202)


async def _subscribe(request: web.Request, cluster: RunningCluster,
                     call: dict[str, Any]) -> web.StreamResponse:
    state = cluster.state
    assert state is not None
    stream_id = str(uuid.uuid4())
    resp = web.StreamResponse(status=200, headers={"Mesos-Stream-Id": stream_id,
                                                   "Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    stream = Stream(stream_id)
    cluster.streams[stream_id] = stream
    fid, effects = state.subscribe(call["subscribe"]["framework_info"], stream_id, time.time())
    log.info("framework %s subscribed (stream %s)", fid, stream_id)
    cluster.apply(effects)
    heartbeat = asyncio.get_running_loop().create_task(_heartbeats(stream, state.heartbeat_s))
    try:
        await stream.pump(resp)
    finally:
        heartbeat.cancel()
        cluster.streams.pop(stream_id, None)
        if cluster.state is not None and not cluster.shutdown_requested.is_set():
            cluster.apply(cluster.state.disconnected(stream_id, time.time()))
    return resp


async def _heartbeats(stream: Any, interval: float) -> None:
    record = frame(P.heartbeat_event())
    while not stream.ended:
        await asyncio.sleep(interval)
        stream.push(record)


# ==================================================================== operator API
def _duration_s(d: Any) -> float | None:
    if not isinstance(d, dict):
        return None
    if "nanoseconds" in d:
        return float(d["nanoseconds"]) / 1e9
    if "seconds" in d:
        return float(d["seconds"]) + float(d.get("nanos", 0)) / 1e9
    return None


async def operator(request: web.Request) -> web.Response:
    if request.method != "POST":
        return _method_not_allowed(request)
    cluster = _cluster(request)
    state = cluster.state
    assert state is not None
    try:
        call = await _read_call(request)
        if not isinstance(call, dict) or not isinstance(call.get("type"), str):
            raise P.CallError(400, "Failed to validate master::Call: Expecting 'type' to be present")
        ctype = call["type"]
        now = time.time()
        if ctype == "GET_AGENTS":
            return _json(views.get_agents(state))
        if ctype == "GET_TASKS":
            return _json(views.get_tasks(state))
        if ctype == "GET_FRAMEWORKS":
            return _json(views.get_frameworks(state))
        if ctype == "GET_HEALTH":
            return _json({"type": "GET_HEALTH", "get_health": {"healthy": True}})
        if ctype == "GET_VERSION":
            return _json({"type": "GET_VERSION", "get_version": {"version_info": _version_info()}})
        if ctype in ("DRAIN_AGENT", "DEACTIVATE_AGENT", "REACTIVATE_AGENT"):
            key = ctype.lower()
            body = call.get(key)
            agent_id = ((body or {}).get("agent_id") or {}).get("value") if isinstance(body, dict) else None
            if not isinstance(agent_id, str):
                raise P.CallError(400, f"Failed to validate master::Call: Expecting '{key}.agent_id' to be present")
            if ctype == "DRAIN_AGENT":
                effects = state.drain_agent(agent_id, _duration_s(body.get("max_grace_period")),
                                            bool(body.get("mark_gone", False)), now)
            elif ctype == "DEACTIVATE_AGENT":
                effects = state.deactivate_agent(agent_id, now)
            else:
                effects = state.reactivate_agent(agent_id, now)
            cluster.apply(effects)
            return web.Response(status=200)
        raise P.CallError(501, f"The plastic local cluster does not implement the operator call {ctype}")
    except P.CallError as exc:
        return _error(exc.status, exc.message)


def _version_info() -> dict[str, Any]:
    return {"build_date": "2026-01-01 00:00:00", "build_time": BUILD_TIME, "build_user": "",
            "version": P.MESOS_VERSION}


async def version(request: web.Request) -> web.Response:
    doc = _version_info()
    doc["emulation"] = "plastic local cluster (Mesos v1 HTTP API, no Mesos binaries)"
    return _json(doc)


async def health(request: web.Request) -> web.Response:
    return web.Response(status=200)


# ==================================================================== plastic admin
async def plastic_status(request: web.Request) -> web.Response:
    return _json(_cluster(request).status())


async def plastic_sandbox(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    task_id = request.query.get("task_id")
    fid = request.query.get("framework_id")
    for (f, t), path in reversed(list(cluster.sandboxes.items())):
        if t == task_id and (fid is None or f == fid):
            return _json({"framework_id": f, "task_id": t, "sandbox": path})
    return _error(404, f"no sandbox for task {task_id}")


def _resolve_agent(cluster: RunningCluster, given: str) -> str:
    """An agent id, or its unique suffix such as `S1` (404 when none matches)."""
    assert cluster.state is not None
    agents = cluster.state.agents
    if given in agents:
        return given
    matches = [a for a in agents if given and a.endswith("-" + given)]
    if len(matches) != 1:
        raise P.CallError(404, f"no such agent {given!r}")
    return matches[0]


async def _admin_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise P.CallError(400, "expecting a JSON object") from None
    if not isinstance(body, dict):
        raise P.CallError(400, "expecting a JSON object")
    return body


async def plastic_interrupt(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    state = cluster.state
    assert state is not None
    try:
        body = await _admin_body(request)
        notice = float(body.get("notice_seconds", INTERRUPTION_NOTICE_S))
        rebalance_only = bool(body.get("rebalance_only", False))
        if body.get("agent_id"):
            targets = [_resolve_agent(cluster, str(body["agent_id"]))]
        elif body.get("cluster"):
            targets = [a.id for a in state.agents.values()
                       if a.spec.cluster == body["cluster"] and a.spec.preemptible and a.connected]
            if not targets:
                raise P.CallError(400, f"no live preemptible agent in cluster {body['cluster']!r}")
        else:
            raise P.CallError(400, "give 'agent_id' or 'cluster'")
        now = time.time()
        for agent_id in targets:
            cluster.apply(state.interrupt(agent_id, notice, now, rebalance_only=rebalance_only))
    except (P.CallError, ValueError, TypeError) as exc:
        return _error(getattr(exc, "status", 400), getattr(exc, "message", str(exc)))
    return _json({"interrupted": [{"agent_id": a, "notice_time": state.agents[a].notice_time,
                                   "rebalance_time": state.agents[a].rebalance_time,
                                   "imds_url": state.agents[a].imds_url} for a in targets]})


async def plastic_kill_agent(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    state = cluster.state
    assert state is not None
    try:
        body = await _admin_body(request)
        agent_id = _resolve_agent(cluster, str(body.get("agent_id", "")))
        agent = state.agents[agent_id]
        if agent.removed:
            raise P.CallError(404, f"agent {agent_id} was removed")
        if not agent.connected:
            raise P.CallError(409, f"agent {agent_id} is already dead")
    except P.CallError as exc:
        return _error(exc.status, exc.message)
    running = cluster.kill_agent(agent_id, "killed by operator (no notice)")
    return _json({"killed": agent_id, "tasks": running})


async def plastic_restart_agent(request: web.Request) -> web.Response:
    """The agent's process restarts (its machine and its executors stay): for ``down_seconds`` its executor
    endpoint answers 503 and its executors' streams are cut; they re-subscribe when it is back."""
    cluster = _cluster(request)
    try:
        body = await _admin_body(request)
        agent_id = _resolve_agent(cluster, str(body.get("agent_id", "")))
        down_s = float(body.get("down_seconds", 5.0))
        if not 0 <= down_s <= 600:
            raise P.CallError(400, "down_seconds must be within 0..600")
        if not cluster.restart_agent(agent_id, down_s):
            raise P.CallError(409, f"agent {agent_id} is dead")
    except (P.CallError, ValueError, TypeError) as exc:
        return _error(getattr(exc, "status", 400), getattr(exc, "message", str(exc)))
    return _json({"restarting": agent_id, "down_seconds": down_s})


async def plastic_shutdown(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    cluster.request_shutdown()
    return _json({"stopping": True})


# ==================================================================== nodes (the local provider's calls)
async def plastic_agents(request: web.Request) -> web.Response:
    """GET: every node (agent) with its state; POST: create agents (plastic.local.nodes.agent_request)."""
    from plastic.local.nodes import CapacityRefused, RequestError

    cluster = _cluster(request)
    if request.method == "GET":
        return _json({"agents": cluster.node_list()})
    if request.method != "POST":
        return _method_not_allowed(request)
    try:
        body = json.loads(await request.text() or "null")
    except ValueError as exc:
        return _error(400, f"the body is not JSON: {exc}")
    try:
        return _json({"agents": cluster.create_agents(body)})
    except RequestError as exc:
        return _error(400, str(exc))
    except CapacityRefused as exc:
        return _error(409, str(exc))


async def plastic_agent(request: web.Request) -> web.Response:
    """DELETE: terminate the node (its agent goes away like a terminated instance)."""
    if request.method != "DELETE":
        return _method_not_allowed(request)
    agent_id = request.match_info["agent_id"]
    if not _cluster(request).terminate_agent(agent_id):
        return _error(404, f"no agent {agent_id} in this cluster")
    return web.Response(status=202)
