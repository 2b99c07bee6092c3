"""Toil's generic batch-system tests through the plastic plugin, against the compose cluster's real
Apache Mesos 1.11 master and agents (the same classes as tests/framework/test_toil_generic.py, which
runs them on the local cluster).

The tasks run in the agent containers, so what they touch must be there at the same path: the
test process's temporary files and each test's `tmp_path` (Toil's job stores, the concurrency
counter) go under /plastic-runs/tmp, which on this host is a link to ./compose-runs, the folder every
container mounts at /plastic-runs.  The workflow tests' job functions live in toil.test, which
imports pytest (not in the agent image) and runs `rsync --version`: the leader's PATH starts with a
shared folder holding a `_toil_worker` that runs the agent's own worker with a copy of this
environment's pytest on PYTHONPATH, and an `rsync` that exits 1.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.compose.helpers import RUNS
from tests.framework import toil_generic as generic
from tests.framework.toil_generic import rootpath  # noqa: F401  (Toil's class-scoped fixture)

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
    tools = _worker_tools(tmp / "toil-tests")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(tmp))
        mp.setenv("PATH", f"{tools}{os.pathsep}{os.environ.get('PATH', '')}")
        mp.setattr(tempfile, "tempdir", str(tmp))
        request.cls.cluster = cluster
        yield cluster


# what toil.test needs beside Toil, copied from this environment (pure Python)
TEST_PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py.py")
AGENT_WORKER = "/opt/plastic/bin/_toil_worker"


def _worker_tools(folder: Path) -> Path:
    """A shared bin folder: `_toil_worker` (the agent's, with pytest importable) and an `rsync` stub."""
    lib, bin_dir = folder / "lib", folder / "bin"
    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and (Path(p) / "_pytest").is_dir())
    for name in TEST_PACKAGES:
        src, dst = site / name, lib / name
        if dst.exists() or not src.exists():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
    bin_dir.mkdir(parents=True, exist_ok=True)
    worker = bin_dir / "_toil_worker"
    here = Path(sys.executable).parent / "_toil_worker"  # a job the leader runs itself, on this host
    worker.write_text("#!/bin/sh\n# the agent's Toil worker, with pytest importable for toil.test's job functions\n"
                      f"w={AGENT_WORKER}; [ -x \"$w\" ] || w={here}\n"
                      f"PYTHONPATH={lib}${{PYTHONPATH:+:$PYTHONPATH}} exec \"$w\" \"$@\"\n")
    rsync = bin_dir / "rsync"
    rsync.write_text("#!/bin/sh\necho 'rsync stub for toil.test' >&2\nexit 1\n")
    for f in (worker, rsync):
        f.chmod(0o755)
    return bin_dir


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest, plastic_cluster) -> Path:
    """Each test's temporary folder on the shared runs folder, named by its /plastic-runs path."""
    return Path(tempfile.mkdtemp(prefix=f"{request.node.name[:40]}-", dir=SHARED / "tmp"))


class TestPlasticBatchSystemOnMesos(generic.TestPlasticBatchSystem):
    """AbstractBatchSystemTest and ignoreNode, on real Mesos."""


class TestPlasticBatchSystemJobsOnMesos(generic.TestPlasticBatchSystemJobs):
    """AbstractBatchSystemJobTest (job concurrency on the core agent's 2 cpus, OMP_NUM_THREADS) on
    real Mesos: whole Toil workflows whose job store is on the shared runs folder."""

    cpuCount = 2  # the compose core agent's cpus (Toil takes this machine's, up to 4)
    allocatedCores = [1, 2]
