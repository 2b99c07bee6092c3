"""Mesos v1 JSON (offers, agent infos, task statuses) -> plastic.core values; pure conversions.

Resources are floored to whole vCPUs and MiB (what can really be packed); agent attributes
`preemptible` (true/True/1/yes), `cluster`, `instance_type` and `instance_id` become an AgentInfo.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from plastic.core.book.events import StatusReceived
from plastic.core.book.placement import AgentInfo, Offer
from plastic.core.executor.share import usable
from plastic.core.model import Resources

TRUE_WORDS = frozenset({"true", "1", "yes"})


def value_of(obj: Any) -> str | None:
    """The string in a Mesos id object (``{"value": ...}``), or the object as a string."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        v = obj.get("value")
        return None if v is None else str(v)
    return str(obj)


def attributes_of(attrs: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for a in attrs or ():
        kind = a.get("type", "TEXT")
        if kind == "TEXT" or "text" in a:
            out[a["name"]] = str((a.get("text") or {}).get("value", ""))
        elif kind == "SCALAR" or "scalar" in a:
            v = float((a.get("scalar") or {}).get("value", 0.0))
            out[a["name"]] = str(int(v)) if v.is_integer() else str(v)
    return out


def _scalars(resources: Iterable[Mapping[str, Any]] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in resources or ():
        if r.get("type", "SCALAR") == "SCALAR" and "scalar" in r:
            out[r["name"]] = out.get(r["name"], 0.0) + float(r["scalar"]["value"])
    return out


def _whole(cpus: float, ram_mib: float) -> Resources:
    """Whole vCPUs and MiB, floored (what can really be packed)."""
    return Resources(int(math.floor(cpus + 1e-9)), int(math.floor(ram_mib + 1e-9)))


def resources_of(resources: Iterable[Mapping[str, Any]] | None) -> Resources:
    """Mesos resources -> whole vCPUs and MiB, floored (what can really be packed)."""
    s = _scalars(resources)
    return _whole(s.get("cpus", 0.0), s.get("mem", 0.0))


def address_of(info: Mapping[str, Any]) -> str:
    """"ip:port" of an offer's agent (its url), or of an agent_info (hostname, port); "" when unknown."""
    addr = ((info.get("url") or {}).get("address")) or {}
    host = addr.get("ip") or addr.get("hostname") or info.get("hostname")
    port = addr.get("port") or info.get("port")
    if host and port:
        return f"{host}:{port}"
    return str(host or "")


def agent_from_offer(offer: Mapping[str, Any], capacity: Resources | None = None) -> AgentInfo:
    """AgentInfo from an offer (or an agent_info): capacity is the caller's if known, else what the
    offer holds."""
    attrs = attributes_of(offer.get("attributes"))
    agent_id = value_of(offer.get("agent_id")) or value_of(offer.get("id")) or ""
    return AgentInfo(agent_id=agent_id, capacity=capacity or resources_of(offer.get("resources")),
                     preemptible=attrs.get("preemptible", "false").strip().lower() in TRUE_WORDS,
                     cluster=attrs.get("cluster", ""), instance_type=attrs.get("instance_type", ""),
                     address=address_of(offer), instance_id=attrs.get("instance_id", ""))


def offer_of(offer: Mapping[str, Any], executor_id: str | None = None) -> Offer:
    """An OFFERS entry: its id, its agent (capacity: what it offers now) and what it offers; with the
    framework's executor (``executor_id``) running on the agent, its share counts as offered, and so
    do a few other frameworks' executors' (plastic.core.executor.share: the tasks of a launch take them
    back)."""
    running = bool(executor_id) and executor_id in [value_of(e) for e in offer.get("executor_ids") or ()]
    s = _scalars(offer.get("resources"))
    share = usable(s.get("cpus", 0.0), s.get("mem", 0.0), running)
    available = _whole(share.cpus, share.ram_mib)
    return Offer(value_of(offer.get("id")) or "", agent_from_offer(offer, available), available)


def agent_of_listing(entry: Mapping[str, Any]) -> AgentInfo | None:
    """An agent of GET_AGENTS (its total resources as capacity), or None for an inactive one."""
    if entry.get("active") is False:
        return None
    info = entry.get("agent_info") or {}
    total = entry.get("total_resources") or info.get("resources")
    agent = agent_from_offer({"agent_id": info.get("id"), "attributes": info.get("attributes"),
                              "resources": total, "hostname": info.get("hostname"), "port": info.get("port")})
    return agent if agent.agent_id else None


def status_event(status: Mapping[str, Any]) -> StatusReceived:
    return StatusReceived(mesos_task_id=value_of(status.get("task_id")) or "", state=str(status.get("state", "")),
                          reason=status.get("reason"), message=status.get("message"),
                          agent_id=value_of(status.get("agent_id")), uuid=status.get("uuid") or None)
