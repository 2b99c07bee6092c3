"""Toil's generic batch-system tests through the plastic plugin, against the compose cluster's real
Apache Mesos 1.11 master and agents (the same classes as tests/framework/test_toil_generic.py, which
runs them on the local cluster).

The tasks run in the agent containers, so what they touch must be there at the same path: the
test process's temporary files (Toil's job stores) go under /plastic-runs/tmp, which on this host is
a link to ./compose-runs, the folder every container mounts at /plastic-runs.  The agents find
`_toil_worker` on their own PATH (/opt/plastic/bin).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.compose.conftest import RUNS
from tests.framework import test_toil_generic as generic
from tests.framework.test_toil_generic import rootpath  # noqa: F401  (Toil's class-scoped fixture)

SHARED = Path("/plastic-runs")


@pytest.fixture(scope="class")
def plastic_cluster(request: pytest.FixtureRequest, cluster):
    """The compose cluster in place of a local one; temporary files where the agents see them."""
    if SHARED.is_symlink() or not SHARED.exists():
        if SHARED.is_symlink() and SHARED.resolve() != RUNS.resolve():
            pytest.fail(f"{SHARED} links to {SHARED.resolve()}, not to {RUNS}")
        if not SHARED.exists():
            SHARED.symlink_to(RUNS)
    elif SHARED.resolve() != RUNS.resolve():
        pytest.fail(f"{SHARED} exists on this host and is not the compose runs folder {RUNS}")
    tmp = SHARED / "tmp"
    tmp.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(tmp))
        mp.setattr(tempfile, "tempdir", str(tmp))
        request.cls.cluster = cluster
        yield cluster


class TestPlasticBatchSystemOnMesos(generic.TestPlasticBatchSystem):
    """AbstractBatchSystemTest and ignoreNode, on real Mesos."""


class TestPlasticBatchSystemJobsOnMesos(generic.TestPlasticBatchSystemJobs):
    """AbstractBatchSystemJobTest (job concurrency on the core agent's 2 cpus, OMP_NUM_THREADS) on
    real Mesos: whole Toil workflows whose job store is on the shared runs folder."""
