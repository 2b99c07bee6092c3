"""Where the tests find the data sets kept in the repository (each folder's README.md or SOURCE.md
says where it came from, when, and under which licence).

Every one is tracked by git (tests/test_house.py checks), so a test that lacks one is in a partial
checkout: it skips with the one line of `missing`, which says how to get the data back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

WFINSTANCES = REPO / "data" / "wfinstances"  # real WfCommons traces (the benchmarks read them too)
CATALOG = REPO / "data" / "catalog"  # the EC2 catalog behind plastic's default one, the spot advisor snapshot
MESOS_TRANSCRIPTS = TESTS / "data" / "mesos-1.11-transcripts"  # bytes exchanged with a real Mesos 1.11.1
CWL_SUITE = TESTS / "data" / "cwl-v1.2"  # the CWL v1.2 conformance suite

DATA_SETS = (WFINSTANCES, CATALOG, MESOS_TRANSCRIPTS, CWL_SUITE)


def missing(path: Path) -> str:
    """The one-line skip reason for data this checkout lacks."""
    where = path.resolve()
    if not where.is_relative_to(REPO):  # a path given from elsewhere (PLASTIC_MESOS_TRANSCRIPTS)
        return f"{path} not found"
    rel = where.relative_to(REPO).as_posix()
    return f"{rel} is missing from this checkout (it is tracked): `git checkout -- {rel}` restores it"


def require(path: Path) -> Path:
    """`path`, or the test skips (one line saying how to get it)."""
    if not path.exists():
        pytest.skip(missing(path))
    return path


def needs(path: Path) -> pytest.MarkDecorator:
    """Mark a test that reads `path`: it skips (one line) when the checkout lacks it."""
    return pytest.mark.skipif(not path.exists(), reason=missing(path))
