"""Fixtures for the local cluster tests, and an example of using LocalCluster from pytest.

    @pytest.fixture(scope="module")
    def cluster():
        with LocalCluster(SPEC, agent_ping_timeout_s=1.0) as c:
            yield c

Tests that kill, drain or interrupt agents take a fresh `fresh_cluster`; the
others share the module's `cluster`.  `scheduler(...)` makes raw v1 clients
that are closed after the test.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import httpx
import pytest

from plastic.local.testing import LocalCluster
from tests.local.clusters import SPEC
from tests.local.rawmesos import Scheduler


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0, kill_grace_s=2.0) as c:
        yield c


@pytest.fixture
def fresh_cluster() -> Iterator[LocalCluster]:
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0, kill_grace_s=2.0) as c:
        yield c


@pytest.fixture
def scheduler() -> Iterator[Callable[..., Scheduler]]:
    made: list[Scheduler] = []

    def make(master_url: str, name: str = "raw-test", *, subscribe: bool = True, **kwargs: object) -> Scheduler:
        s = Scheduler(master_url, name, **kwargs)  # type: ignore[arg-type]
        made.append(s)
        if subscribe:
            s.subscribe()
        return s

    yield make
    for s in made:
        if not s.closed:
            with contextlib.suppress(httpx.HTTPError):  # the cluster may be gone already
                s.call("TEARDOWN")
        s.shutdown()
