"""What a cloud deployment of a plan asks for, pure: the clusters, the instances still missing, and
the acceptable alternatives to a planned type.

A plan's clusters (plastic.plan/v1 ``clusters``: name, instance type, market, count) become
`ClusterOrder`s.  `still_missing` compares them with the instances the cloud already has for the run
(counted by their ``plastic:cluster`` tag), so that a repeated ``plastic cloud up`` creates nothing
twice.  `alternatives` gives the types a spot request may fall back to when the planned one is
refused: the same vCPUs and at least the RAM, a price in that market, cheapest first (EC2 Fleet
overrides).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from plastic.core.model import Catalog, InstanceType, Market

MAX_ALTERNATIVES = 4  # overrides besides the planned type


@dataclass(frozen=True, slots=True)
class ClusterOrder:
    cluster: str
    instance_type: str
    market: Market
    count: int
    usd_per_hour: float  # one node's price in its market


def alternatives(planned: InstanceType, catalog: Catalog, market: Market,
                 limit: int = MAX_ALTERNATIVES) -> tuple[str, ...]:
    """Types of the same shape or roomier in RAM (same vCPUs, RAM >= planned), with a price in
    ``market`` no more than 1.5 x the planned type's, cheapest first; the planned type excluded."""
    own = planned.usd_per_hour(market)
    ceiling = own * 1.5 if own is not None else None
    found = []
    for t in catalog.instance_types:
        price = t.usd_per_hour(market)
        if (t.name == planned.name or t.vcpus != planned.vcpus or t.ram_mib < planned.ram_mib or price is None
                or (ceiling is not None and price > ceiling)):
            continue
        found.append((price, t.ram_mib, t.name))
    return tuple(name for _, _, name in sorted(found)[:limit])


def still_missing(orders: Sequence[ClusterOrder], existing: Mapping[str, int]) -> list[ClusterOrder]:
    """The orders less what each cluster already has (live instances tagged with it); none below 0."""
    out = []
    for o in orders:
        n = o.count - existing.get(o.cluster, 0)
        if n > 0:
            out.append(ClusterOrder(o.cluster, o.instance_type, o.market, n, o.usd_per_hour))
    return out
