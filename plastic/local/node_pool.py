"""The running cluster's nodes as a provider sees them (plastic.local.nodes), kept without I/O: every
agent the cluster ever had under its agent id, the ones created on request (POST /plastic/v1/agents:
pending until they register after their boot delay, or refused as an emulated spot shortage) and the
terminated ones (DELETE /plastic/v1/agents/ID).  The cluster boots, registers and kills the agents."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from plastic.local.config import AgentSpec
from plastic.local.model import Agent
from plastic.local.nodes import AgentRequest, CapacityRefused, Node, agent_request, new_instance_id, node_doc


class NodePool:
    """The nodes, in creation order, with what creating and terminating them change."""

    def __init__(self, default_boot_s: float, refuse_spot: tuple[str, ...]):
        self.default_boot_s = default_boot_s
        self.refuse_spot = refuse_spot  # instance types ("*": all) whose spot creations are refused
        self.nodes: dict[str, Node] = {}

    def registered(self, agent_id: str, spec: AgentSpec, instance_id: str | None) -> None:
        """An agent registered: a node of its own, unless it was created as one (`create`)."""
        if agent_id not in self.nodes:
            market = "spot" if spec.preemptible else "on-demand"
            self.nodes[agent_id] = Node(agent_id, spec, time.time(), instance_id, market=market,
                                        state_since=time.time())

    def create(self, body: Any, reserve_agent_id: Callable[[], str], now: float) -> tuple[AgentRequest, list[Node]]:
        """The nodes a creation body asks for, pending under agent ids reserved for them.
        Raises RequestError for a wrong body, CapacityRefused for an emulated spot shortage."""
        request = agent_request(body, self.default_boot_s)
        itype = request.specs[0].instance_type or "*"
        if request.market == "spot" and ("*" in self.refuse_spot or itype in self.refuse_spot):
            raise CapacityRefused(f"InsufficientInstanceCapacity: no spot capacity for {itype} (emulated)")
        created = []
        for n, spec in enumerate(request.specs):
            agent_id = reserve_agent_id()
            instance_id = request.instance_ids[n] if request.instance_ids else new_instance_id()
            self.nodes[agent_id] = Node(agent_id, spec, now, instance_id, dict(request.tags), request.market,
                                        booted=False, state_since=now)
            created.append(self.nodes[agent_id])
        return request, created

    def docs(self, agents: Mapping[str, Agent], imds_urls: Mapping[str, str]) -> list[dict[str, Any]]:
        """Every node's document (GET /plastic/v1/agents), oldest first."""
        return [node_doc(n, agents.get(a), imds_urls[a] if a in imds_urls
                         else getattr(agents.get(a), "imds_url", None))
                for a, n in sorted(self.nodes.items(), key=lambda kv: kv[1].created_at)]
