"""Providers: create, terminate and list the nodes of a hybrid cloud (the elastic controller's hands).

A small interface (Karpenter's CloudProvider is the model): `Provider.create(NodeRequest)` ->
CreateResult (the node ids created, and capacity errors as data, never raised), `terminate(node_ids)`,
`list_nodes()` -> ProviderNode with their state (pending, ready, draining, interrupted, gone).
Implementations: `local` (the local Mesos-API cluster adds and removes agents), `recording` (a fake
that records every call and answers as told, for tests), and later `ec2`.
"""

from plastic.core.errors import ProviderError
from plastic.providers.base import (
    CapacityError,
    CreateResult,
    NodeRequest,
    Provider,
    ProviderNode,
)

__all__ = ["CapacityError", "CreateResult", "NodeRequest", "Provider", "ProviderError", "ProviderNode"]
