"""The `local` provider: nodes are agents of the local Mesos-API cluster (plastic.local), added and
terminated through its control calls while it runs.

    POST   /plastic/v1/agents            create agents (pending, then registered after their boot delay)
    DELETE /plastic/v1/agents/AGENT_ID   terminate one (it goes away like a terminated instance)
    GET    /plastic/v1/agents            every agent the cluster ever had, with its state

A node is its agent: the node id is the agent id.  A refusal of the cluster (the emulated capacity
shortage, HTTP 409) comes back as a CapacityError, never raised; an unreachable cluster is a
ProviderError.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from plastic.core.elastic.model import NodeState
from plastic.core.errors import ProviderError
from plastic.core.model import Market
from plastic.providers.base import (
    CapacityError,
    CreateResult,
    NodeRequest,
    ProviderNode,
)

AGENTS_PATH = "/plastic/v1/agents"
TIMEOUT_S = 10.0


class LocalProvider:
    name = "local"

    def __init__(self, master_url: str, *, boot_s: float = 0.0, timeout_s: float = TIMEOUT_S):
        self.base = master_url.rstrip("/")
        self.boot_s = boot_s
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        try:
            with httpx.Client(timeout=self.timeout_s, trust_env=False) as client:
                return client.request(method, self.base + path, json=body)
        except httpx.HTTPError as error:
            raise ProviderError(f"the local cluster does not answer: {error}", source=self.base) from None

    def create(self, request: NodeRequest) -> CreateResult:
        body = {"cluster": request.cluster, "cpus": request.vcpus, "ram_mib": request.ram_mib,
                "preemptible": request.market is Market.SPOT, "instance_type": request.instance_type,
                "market": str(request.market), "count": request.count, "boot_seconds": self.boot_s,
                "tags": dict(request.tags)}
        answer = self._call("POST", AGENTS_PATH, body)
        if answer.status_code == 409:  # the cluster emulates a capacity shortage
            return CreateResult(refused=(CapacityError(request.instance_type, request.market,
                                                       answer.text.strip() or "refused", request.count),))
        if answer.status_code != 200:
            raise ProviderError(f"creating agents: HTTP {answer.status_code}: {answer.text.strip()[:200]}",
                                source=self.base)
        return CreateResult(tuple(str(a["agent_id"]) for a in answer.json().get("agents", ())))

    def terminate(self, node_ids: Sequence[str]) -> None:
        for node_id in node_ids:
            answer = self._call("DELETE", f"{AGENTS_PATH}/{node_id}")
            if answer.status_code not in (200, 202, 404):  # 404: already gone, nothing to do
                raise ProviderError(f"terminating agent {node_id}: HTTP {answer.status_code}: "
                                    f"{answer.text.strip()[:200]}", source=self.base)

    def list_nodes(self) -> list[ProviderNode]:
        answer = self._call("GET", AGENTS_PATH)
        if answer.status_code != 200:
            raise ProviderError(f"listing agents: HTTP {answer.status_code}", source=self.base)
        return [node_of(a) for a in answer.json().get("agents", ())]


def node_of(doc: dict[str, Any]) -> ProviderNode:
    market = Market(doc.get("market") or ("spot" if doc.get("preemptible") else "on-demand"))
    since = float(doc.get("since") or 0.0)
    return ProviderNode(node_id=str(doc["agent_id"]), cluster=str(doc.get("cluster") or ""),
                        instance_type=str(doc.get("instance_type") or ""), market=market,
                        state=NodeState(doc.get("state") or "ready"),
                        created_at=float(doc.get("created_at") or since), state_since=since,
                        agent_id=str(doc["agent_id"]), instance_id=doc.get("instance_id") or None,
                        tags=dict(doc.get("tags") or {}), imds_url=doc.get("imds_url") or None)
