"""Real Redis servers for the store tests, started through plastic.store.embedded (no fakes, no mocks).

One server per test session (on a temporary directory); every test gets its own key
prefix, so tests never see each other's data.  Tests that stop or kill a server start
their own.
"""

from __future__ import annotations

import uuid

import pytest

from plastic.store import Store


@pytest.fixture
def prefix() -> str:
    return f"t-{uuid.uuid4().hex[:12]}:"


@pytest.fixture
def store(client, prefix) -> Store:
    return Store(client, prefix=prefix)


@pytest.fixture
def run_id(store) -> str:
    return store.create_run(fields={"workflow": "wf.cwl"})
