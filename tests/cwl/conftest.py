"""Loaded examples shared by the CWL tests (a first load costs about a second)."""

from __future__ import annotations

import pytest

from plastic.cwl.loader import CwlWorkflow, load_cwl
from tests.cwl.helpers import example


@pytest.fixture(scope="session")
def scatter_gather() -> CwlWorkflow:
    return load_cwl(*example("scatter-gather"))


@pytest.fixture(scope="session")
def nested_scatter() -> CwlWorkflow:
    return load_cwl(*example("nested-scatter"))


@pytest.fixture(scope="session")
def dynamic_resources() -> CwlWorkflow:
    return load_cwl(*example("dynamic-resources"))
