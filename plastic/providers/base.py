"""The provider interface and its values (see plastic.providers).  Its errors live in the core
(ProviderError in plastic.core.errors, CapacityError in plastic.core.elastic.model), so the AWS
adapter raises and returns them without importing the providers that use it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from plastic.core.elastic.model import CapacityError, NodeState
from plastic.core.model import Market


@dataclass(frozen=True, slots=True)
class NodeRequest:
    """``count`` nodes of one (instance type, market) for one cluster of the run."""

    cluster: str
    instance_type: str
    market: Market
    count: int
    vcpus: int
    ram_mib: int
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CreateResult:
    node_ids: tuple[str, ...] = ()
    refused: tuple[CapacityError, ...] = ()


@dataclass(frozen=True, slots=True)
class ProviderNode:
    """A node as the provider knows it; ``agent_id`` is the Mesos agent it runs, when known (a local
    agent is its node); ``instance_id`` what the agent advertises in its ``instance_id`` attribute."""

    node_id: str
    cluster: str
    instance_type: str
    market: Market
    state: NodeState
    created_at: float  # epoch seconds
    state_since: float  # epoch seconds
    agent_id: str | None = None
    instance_id: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    imds_url: str | None = None


class Provider(Protocol):
    name: str

    def create(self, request: NodeRequest) -> CreateResult:
        """Create the nodes; capacity errors come back in ``refused``, never as an exception."""

    def terminate(self, node_ids: Sequence[str]) -> None:
        """Terminate the nodes (idempotent: an unknown or gone node is not an error)."""

    def list_nodes(self) -> list[ProviderNode]:
        """Every node of the run the provider knows, gone ones included while it remembers them."""
