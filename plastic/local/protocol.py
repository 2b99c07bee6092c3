"""JSON shapes of the Mesos v1 API as a real 1.11.1 master sends them.

Field names and their order follow the recorded transcripts
(tests/data/mesos-1.11-transcripts): a status is task_id, state, message,
source, reason, agent_id, executor_id, timestamp, uuid, container_status,
unreachable_time.
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Any

MESOS_VERSION = "1.11.1"

TERMINAL_STATES = frozenset({
    "TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_ERROR", "TASK_LOST", "TASK_DROPPED",
    "TASK_GONE", "TASK_GONE_BY_OPERATOR",
})

PARTITION_AWARE = "PARTITION_AWARE"
TASK_KILLING_STATE = "TASK_KILLING_STATE"


def is_terminal(state: str) -> bool:
    return state in TERMINAL_STATES


def value(v: str) -> dict[str, str]:
    return {"value": v}


def ip_as_int(ip: str) -> int:
    """Mesos packs the IPv4 address in network order into a uint32 read as little-endian: 127.0.0.1 -> 16777343."""
    return struct.unpack("<I", ipaddress.IPv4Address(ip).packed)[0]


def master_info(master_id: str, host: str, port: int) -> dict[str, Any]:
    return {
        "id": master_id, "ip": ip_as_int(host), "port": port, "pid": f"master@{host}:{port}",
        "hostname": host, "version": MESOS_VERSION,
        "address": {"hostname": host, "ip": host, "port": port},
        # A real 1.11.1 master sends this empty object too (an unknown capability).
        "capabilities": [{"type": "AGENT_UPDATE"}, {"type": "AGENT_DRAINING"}, {}],
    }


def container_status(container_id: str, pid: int | None) -> dict[str, Any]:
    cs: dict[str, Any] = {
        "container_id": value(container_id),
        "network_infos": [{"ip_addresses": [{"protocol": "IPv4", "ip_address": "127.0.0.1"}]}],
    }
    if pid is not None:
        cs["executor_pid"] = pid
    return cs


def status(task_id: str, state: str, *, timestamp: float, message: str | None = None, source: str | None = None,
           reason: str | None = None, agent_id: str | None = None, executor_id: str | None = None,
           uuid: str | None = None, container: dict[str, Any] | None = None,
           unreachable_time: float | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"task_id": value(task_id), "state": state}
    if message is not None:
        s["message"] = message
    if source is not None:
        s["source"] = source
    if reason is not None:
        s["reason"] = reason
    if agent_id is not None:
        s["agent_id"] = value(agent_id)
    if executor_id is not None:
        s["executor_id"] = value(executor_id)
    s["timestamp"] = timestamp
    if uuid is not None:
        s["uuid"] = uuid
    if container is not None:
        s["container_status"] = container
    if unreachable_time is not None:
        s["unreachable_time"] = {"nanoseconds": int(unreachable_time * 1e9)}
    return s


def update_event(st: dict[str, Any]) -> dict[str, Any]:
    return {"type": "UPDATE", "update": {"status": st}}


def heartbeat_event() -> dict[str, Any]:
    return {"type": "HEARTBEAT"}


def error_event(message: str) -> dict[str, Any]:
    return {"type": "ERROR", "error": {"message": message}}


def rescind_event(offer_id: str) -> dict[str, Any]:
    return {"type": "RESCIND", "rescind": {"offer_id": value(offer_id)}}


def failure_event(agent_id: str) -> dict[str, Any]:
    return {"type": "FAILURE", "failure": {"agent_id": value(agent_id)}}


def executor_failure_event(agent_id: str, executor_id: str, status: int | None) -> dict[str, Any]:
    failure: dict[str, Any] = {"agent_id": value(agent_id), "executor_id": value(executor_id)}
    if status is not None:
        failure["status"] = status
    return {"type": "FAILURE", "failure": failure}


def subscribed_event(framework_id: str, heartbeat_s: float, minfo: dict[str, Any]) -> dict[str, Any]:
    return {"type": "SUBSCRIBED", "subscribed": {"framework_id": value(framework_id),
                                                  "heartbeat_interval_seconds": float(heartbeat_s),
                                                  "master_info": minfo}}


def offers_event(offers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "OFFERS", "offers": {"offers": offers}}


def attributes_json(attrs: list[tuple[str, str | float]]) -> list[dict[str, Any]]:
    out = []
    for name, v in attrs:
        if isinstance(v, str):
            out.append({"name": name, "type": "TEXT", "text": {"value": v}})
        else:
            out.append({"name": name, "type": "SCALAR", "scalar": {"value": float(v)}})
    return out


def ns(t: float) -> dict[str, int]:
    return {"nanoseconds": int(t * 1e9)}


class CallError(Exception):
    """A call the master refuses: the HTTP status and the text/plain body a real master gives."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message
