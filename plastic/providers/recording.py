"""A provider that records every call and answers as told (for tests): nodes are created pending,
become ready after ``boot_s`` of its clock, and a (type, market) listed in ``refuse`` is refused."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from plastic.core.elastic.model import NodeState
from plastic.core.model import Market
from plastic.providers.base import (
    CapacityError,
    CreateResult,
    NodeRequest,
    ProviderNode,
)


class RecordingProvider:
    name = "recording"

    def __init__(self, *, boot_s: float = 0.0, refuse: Sequence[tuple[str, Market]] = (),
                 clock: Callable[[], float] = time.time):
        self.boot_s = boot_s
        self.refuse = set(refuse)
        self.clock = clock
        self.calls: list[tuple[str, object]] = []
        self.nodes: dict[str, ProviderNode] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def create(self, request: NodeRequest) -> CreateResult:
        with self._lock:
            self.calls.append(("create", request))
            if (request.instance_type, request.market) in self.refuse or ("*", request.market) in self.refuse:
                return CreateResult(refused=(CapacityError(request.instance_type, request.market,
                                                           "InsufficientInstanceCapacity", request.count),))
            now = self.clock()
            ids = []
            for _ in range(request.count):
                node_id = f"node-{next(self._ids)}"
                self.nodes[node_id] = ProviderNode(node_id, request.cluster, request.instance_type, request.market,
                                                   NodeState.PENDING, now, now, agent_id=node_id, instance_id=node_id,
                                                   tags=dict(request.tags))
                ids.append(node_id)
            return CreateResult(tuple(ids))

    def terminate(self, node_ids: Sequence[str]) -> None:
        with self._lock:
            self.calls.append(("terminate", tuple(node_ids)))
            now = self.clock()
            for node_id in node_ids:
                node = self.nodes.get(node_id)
                if node is not None and node.state is not NodeState.GONE:
                    self.nodes[node_id] = replace(node, state=NodeState.GONE, state_since=now)

    def list_nodes(self) -> list[ProviderNode]:
        with self._lock:
            self.calls.append(("list", None))
            now = self.clock()
            for node_id, node in list(self.nodes.items()):
                if node.state is NodeState.PENDING and now - node.created_at >= self.boot_s:
                    self.nodes[node_id] = replace(node, state=NodeState.READY, state_since=now)
            return sorted(self.nodes.values(), key=lambda n: n.node_id)

    def interrupt(self, node_id: str) -> None:
        """The world takes a node (a spot interruption)."""
        with self._lock:
            node = self.nodes[node_id]
            self.nodes[node_id] = replace(node, state=NodeState.INTERRUPTED, state_since=self.clock())
