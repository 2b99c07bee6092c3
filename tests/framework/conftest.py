"""Shared fixtures of the framework tests: a store on the session's real Redis server (tests/conftest.py)
under a fresh key prefix per test."""

from __future__ import annotations

import uuid

import pytest

from plastic.store import Store


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: Toil's own mark on its long generic batch-system tests")


@pytest.fixture
def store(client) -> Store:
    return Store(client, prefix=f"t-{uuid.uuid4().hex[:12]}:")


@pytest.fixture
def run_id(store) -> str:
    return store.create_run(fields={"workflow": "wf.cwl"})
