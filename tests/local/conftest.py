"""Fixtures for the local cluster tests, and an example of using LocalCluster from pytest.

    @pytest.fixture(scope="module")
    def cluster():
        with LocalCluster(SPEC, agent_ping_timeout_s=1.0) as c:
            yield c

Tests that kill, drain or interrupt agents take a fresh `fresh_cluster`; the
others share the module's `cluster`.  `scheduler(...)` makes raw v1 clients
that are closed after the test (the fixture lives in tests/local/rawmesos.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from plastic.local.handle import LocalCluster
from tests.local.clusters import SPEC
from tests.local.rawmesos import scheduler  # noqa: F401  (the fixture, shared with tests/compose)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0, kill_grace_s=2.0) as c:
        yield c


@pytest.fixture
def fresh_cluster() -> Iterator[LocalCluster]:
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0, kill_grace_s=2.0) as c:
        yield c
