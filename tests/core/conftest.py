"""Shared fixtures for the planner core tests: a small, hand-written catalog (tests/fakes/catalogs.py).

The figures are the real us-east-1 c5/m5/r5 prices (large..4xlarge) the brief
gives; the InstanceType objects are built there directly so that the core tests
do not depend on any catalog file or loader.
"""

from __future__ import annotations

import pytest

from plastic.core.model import Catalog, NodeShape
from tests.fakes.catalogs import CATALOG, SHAPES


@pytest.fixture
def catalog() -> Catalog:
    return CATALOG


@pytest.fixture
def shapes() -> tuple[NodeShape, ...]:
    return SHAPES
