"""Hand-written catalogs for the core tests: the InstanceType objects are built here directly, so the
tests do not depend on any catalog file or loader.

- ``CATALOG`` / ``SHAPES``: the real us-east-1 c5/m5/r5 prices (large..4xlarge) the brief gives (the
  planner, packing, budget and lower-bound tests);
- ``ELASTIC_CATALOG`` / ``ELASTIC_SHAPES``: the six types of the elastic controller's scenarios (the
  controller, its properties and forecast, the Provisioner);
- ``THREE_CATALOG`` / ``THREE_SHAPES``: three types small enough to work costs out by hand (c5.large on
  demand the cheapest reliable node, m5.large spot the cheapest vCPU): the floor, a run's floor in its
  report, and the elastic simulation.
"""

from __future__ import annotations

from plastic.core.model import (
    Catalog,
    InstanceType,
    Market,
    NodeShape,
    Reserve,
    node_shapes,
)

# name, vcpus, GiB, on-demand $/h, spot $/h, interruption band
CATALOG_ROWS: tuple[tuple[str, int, int, float, float, str], ...] = (
    ("m5.large", 2, 8, 0.096, 0.0326, "15-20%"),
    ("m5.xlarge", 4, 16, 0.192, 0.0653, ">20%"),
    ("m5.2xlarge", 8, 32, 0.384, 0.1766, "10-15%"),
    ("m5.4xlarge", 16, 64, 0.768, 0.3226, "15-20%"),
    ("c5.large", 2, 4, 0.085, 0.0349, "<5%"),
    ("c5.xlarge", 4, 8, 0.17, 0.0748, "<5%"),
    ("c5.2xlarge", 8, 16, 0.34, 0.1496, "5-10%"),
    ("c5.4xlarge", 16, 32, 0.68, 0.2312, ">20%"),
    ("r5.large", 2, 16, 0.126, 0.0504, "<5%"),
    ("r5.xlarge", 4, 32, 0.252, 0.0781, "15-20%"),
    ("r5.2xlarge", 8, 64, 0.504, 0.1966, ">20%"),
    ("r5.4xlarge", 16, 128, 1.008, 0.3528, ">20%"),
)

INSTANCE_TYPES: tuple[InstanceType, ...] = tuple(
    InstanceType(name, vcpus, gib * 1024, od, spot, band) for name, vcpus, gib, od, spot, band in CATALOG_ROWS
)
TYPE_NAMES: tuple[str, ...] = tuple(t.name for t in INSTANCE_TYPES)
CATALOG = Catalog(INSTANCE_TYPES, source="tests/fakes/catalogs.py", region="us-east-1")
SHAPES: tuple[NodeShape, ...] = node_shapes(CATALOG)
CHEAPEST_ON_DEMAND = min(t.on_demand_usd_per_hour for t in INSTANCE_TYPES)  # c5.large, 0.085


def shape(name: str, market: Market, shapes=SHAPES) -> NodeShape:
    """The shape of `name` bought on `market` (a test helper; fails loudly when absent)."""
    for s in shapes:
        if s.name == name and s.market is market:
            return s
    raise LookupError(f"{name} {market} not in shapes")


def sub_shapes(*names: str, reserve: Reserve = Reserve()) -> tuple[NodeShape, ...]:
    """Node shapes of a catalog restricted to the given type names."""
    return node_shapes(Catalog(tuple(t for t in INSTANCE_TYPES if t.name in names)), reserve)


ELASTIC_CATALOG = Catalog((
    InstanceType("c5.large", 2, 4096, 0.085, 0.0349, "<5%"),
    InstanceType("c5.xlarge", 4, 8192, 0.17, 0.0748, "<5%"),
    InstanceType("c5.4xlarge", 16, 32768, 0.68, 0.2312, ">20%"),
    InstanceType("m5.large", 2, 8192, 0.096, 0.0326, "15-20%"),
    InstanceType("m5.xlarge", 4, 16384, 0.192, 0.0653, ">20%"),
    InstanceType("r5.large", 2, 16384, 0.126, 0.0504, "<5%"),
))
ELASTIC_SHAPES = node_shapes(ELASTIC_CATALOG)

THREE_CATALOG = Catalog((
    InstanceType("c5.large", 2, 4096, 0.085, 0.0349, "<5%"),
    InstanceType("c5.xlarge", 4, 8192, 0.17, 0.0748, "<5%"),
    InstanceType("m5.large", 2, 8192, 0.096, 0.0326, "15-20%"),
))
THREE_SHAPES = node_shapes(THREE_CATALOG)
