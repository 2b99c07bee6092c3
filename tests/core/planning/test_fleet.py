"""plastic.core.planning.fleet: a plan's clusters on a cloud, what is still missing, and spot alternatives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from plastic.core.model import Catalog, InstanceType, Market
from plastic.core.planning.fleet import ClusterOrder, alternatives, still_missing

CATALOG = Catalog((
    InstanceType("m5.large", 2, 8192, 0.096, 0.0326, "15-20%"),
    InstanceType("m5a.large", 2, 8192, 0.086, 0.0300, "5-10%"),
    InstanceType("r5.large", 2, 16384, 0.126, 0.0400, "<5%"),
    InstanceType("c5.large", 2, 4096, 0.085, 0.0349, "<5%"),  # less RAM: never an alternative to m5.large
    InstanceType("m5.xlarge", 4, 16384, 0.192, 0.0650, "10-15%"),  # more vCPUs: a different shape
    InstanceType("x2.large", 2, 65536, 0.500, 0.2000, "<5%"),  # too dear: over 1.5 x
    InstanceType("z.large", 2, 8192, 0.090, None, None),  # no spot price
))


def test_alternatives_have_the_same_vcpus_at_least_the_ram_and_a_price_cheapest_first():
    m5 = CATALOG.by_name("m5.large")
    assert alternatives(m5, CATALOG, Market.SPOT) == ("m5a.large", "r5.large")
    assert alternatives(m5, CATALOG, Market.ON_DEMAND) == ("m5a.large", "z.large", "r5.large")
    assert alternatives(m5, CATALOG, Market.SPOT, limit=1) == ("m5a.large",)


def test_still_missing_counts_what_each_cluster_already_has():
    orders = [ClusterOrder("core", "c5.large", Market.ON_DEMAND, 1, 0.085),
              ClusterOrder("burst", "m5.large", Market.SPOT, 3, 0.0326)]
    assert still_missing(orders, {}) == orders
    assert still_missing(orders, {"core": 1, "burst": 1}) == [ClusterOrder("burst", "m5.large", Market.SPOT, 2, 0.0326)]
    assert still_missing(orders, {"core": 2, "burst": 5, "other": 4}) == []


@given(st.lists(st.integers(0, 6), min_size=1, max_size=4), st.lists(st.integers(0, 8), min_size=4, max_size=4))
def test_an_up_after_an_up_asks_for_nothing(counts, present):
    orders = [ClusterOrder(f"c{i}", "m5.large", Market.SPOT, n, 0.03) for i, n in enumerate(counts)]
    existing = {f"c{i}": p for i, p in enumerate(present)}
    first = still_missing(orders, existing)
    after = dict(existing)
    for o in first:
        after[o.cluster] = after.get(o.cluster, 0) + o.count
    assert still_missing(orders, after) == []
    assert all(o.count > 0 for o in first)
