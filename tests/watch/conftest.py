"""A LocalCluster of spot agents (each with its emulated IMDSv2 endpoint), shared by a test module."""

from __future__ import annotations

import pytest

from plastic.local.handle import LocalCluster

SPEC = {"clusters": [{"name": "burst", "count": 3, "cpus": 1, "ram_mib": 512, "preemptible": True}]}


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0) as c:
        yield c
