"""The local cluster's nodes as a provider sees them: every agent it ever had, with a node state.

A node is an agent, under the agent's id (a node created while the cluster runs reserves its agent id
at once and registers with the master after its boot delay, exactly as a new Mesos agent does).
Node states: pending (booting), ready (registered), draining (drained by the operator API, or a spot
notice is scheduled), interrupted (a spot interruption took it), gone (terminated, or killed).

`agent_request` checks the body of a creation (POST /plastic/v1/agents) field by field and turns it
into AgentSpecs; a wrong field is a RequestError naming it (HTTP 400, one line).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plastic.local.config import DEFAULT_DISK_MIB, AgentSpec

MARKETS = ("spot", "on-demand")
MAX_COUNT = 64
INTERRUPTION_CAUSE = "spot interruption"


class CapacityRefused(Exception):
    """The cluster emulates a capacity shortage for what was asked (HTTP 409)."""


class RequestError(ValueError):
    """A creation request the cluster refuses (its message names the field)."""


@dataclass
class Node:
    agent_id: str
    spec: AgentSpec
    created_at: float
    instance_id: str | None
    tags: dict[str, str] = field(default_factory=dict)
    market: str = "on-demand"
    booted: bool = True  # registered with the master (the agents a cluster starts with always are)
    terminated_at: float | None = None
    state_since: float = 0.0


@dataclass(frozen=True)
class AgentRequest:
    specs: tuple[AgentSpec, ...]
    market: str
    boot_s: float
    tags: dict[str, str]
    instance_ids: tuple[str, ...] = ()  # given: the agents advertise these (an instance made elsewhere)


def _number(body: Mapping[str, Any], name: str, *, positive: bool = True) -> float:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestError(f"{name}: a number is needed, got {value!r}")
    if (positive and value <= 0) or value < 0:
        raise RequestError(f"{name}: must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


def agent_request(body: Any, default_boot_s: float) -> AgentRequest:
    """The AgentSpecs a creation body asks for (see the module docstring)."""
    if not isinstance(body, Mapping):
        raise RequestError("the body must be a JSON object")
    unknown = set(body) - {"cluster", "cpus", "ram_mib", "preemptible", "instance_type", "market", "count",
                           "boot_seconds", "tags", "instance_ids"}
    if unknown:
        raise RequestError(f"unknown field {sorted(unknown)[0]!r}")
    cluster = body.get("cluster")
    if not isinstance(cluster, str) or not cluster.strip():
        raise RequestError("cluster: a name is needed")
    cpus, ram = _number(body, "cpus"), _number(body, "ram_mib")
    preemptible = body.get("preemptible", False)
    if not isinstance(preemptible, bool):
        raise RequestError(f"preemptible: true or false, got {preemptible!r}")
    market = body.get("market") or ("spot" if preemptible else "on-demand")
    if market not in MARKETS:
        raise RequestError(f"market: one of {', '.join(MARKETS)}, got {market!r}")
    if (market == "spot") != preemptible:
        raise RequestError(f"market {market} does not go with preemptible {str(preemptible).lower()}")
    count = body.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise RequestError(f"count: a whole number from 1 to {MAX_COUNT}, got {count!r}")
    boot_s = _number(body, "boot_seconds", positive=False) if body.get("boot_seconds") is not None else default_boot_s
    itype = body.get("instance_type")
    if itype is not None and not isinstance(itype, str):
        raise RequestError(f"instance_type: a name, got {itype!r}")
    tags = body.get("tags") or {}
    if not isinstance(tags, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items()):
        raise RequestError("tags: a map of strings to strings")
    ids = body.get("instance_ids") or []
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids) or (ids and len(ids) != count):
        raise RequestError(f"instance_ids: a list of {count} instance id(s), got {ids!r}")
    spec = AgentSpec(cluster=cluster.strip(), cpus=cpus, ram_mib=ram, preemptible=preemptible,
                     disk_mib=DEFAULT_DISK_MIB, instance_type=itype or None, attributes=(("market", market),))
    return AgentRequest(tuple(spec for _ in range(count)), market, boot_s, dict(tags), tuple(ids))


def new_instance_id() -> str:
    """An EC2-like instance id."""
    return "i-" + uuid.uuid4().hex[:17]


def node_state(node: Node, agent: Any) -> str:
    """The node's state from its record and its agent's (None: not registered yet)."""
    if node.terminated_at is not None:
        return "gone"
    if agent is None or not node.booted:
        return "pending"
    if not agent.connected or agent.removed:
        return "interrupted" if agent.death_cause == INTERRUPTION_CAUSE else "gone"
    if agent.drain or agent.notice_time:
        return "draining"
    return "ready"


def node_doc(node: Node, agent: Any, imds_url: str | None) -> dict[str, Any]:
    state = node_state(node, agent)
    since = node.terminated_at or (agent.died_at if agent is not None and agent.died_at else node.state_since)
    return {"agent_id": node.agent_id, "instance_id": node.instance_id, "cluster": node.spec.cluster,
            "instance_type": node.spec.instance_type, "market": node.market, "preemptible": node.spec.preemptible,
            "cpus": node.spec.cpus, "ram_mib": node.spec.ram_mib, "state": state, "created_at": node.created_at,
            "since": since, "tags": dict(node.tags), "imds_url": imds_url}
