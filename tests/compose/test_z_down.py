"""Last: `down -v` leaves nothing of the project behind."""

from __future__ import annotations


def test_down_leaves_no_container_network_or_volume(cluster):
    cluster.run("down", "-v", "--remove-orphans")
    assert cluster.leftovers() == {"container": [], "network": [], "volume": []}
