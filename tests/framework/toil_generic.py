"""Toil's generic batch-system tests (toil.test.batchSystems.batchSystemTest) set up for the plastic batch
system: the classes and fixtures tests/framework/test_toil_generic.py collects against a local cluster and
tests/compose/test_c_toil_generic.py subclasses against the compose cluster's real Mesos.  What they need
is told in tests/framework/test_toil_generic.py."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("toil")

from plastic.local.handle import LocalCluster

VENV_BIN = str(Path(sys.executable).parent)


def _rsync_stub() -> str | None:
    """A directory holding an `rsync` that exits 1, when there is no rsync on PATH."""
    if shutil.which("rsync"):
        return None
    stub_dir = tempfile.mkdtemp(prefix="plastic-rsync-stub-")
    atexit.register(shutil.rmtree, stub_dir, ignore_errors=True)
    stub = Path(stub_dir) / "rsync"
    stub.write_text("#!/bin/sh\necho 'rsync stub for toil.test (no rsync here)' >&2\nexit 1\n")
    stub.chmod(0o755)
    return stub_dir


RSYNC_STUB = _rsync_stub()


def _test_path() -> str:
    return os.pathsep.join([p for p in (VENV_BIN, RSYNC_STUB) if p] + [os.environ.get("PATH", "")])


_saved_path = os.environ.get("PATH", "")
os.environ["PATH"] = _test_path()
try:
    with warnings.catch_warnings():  # toil.test marks its tests with marks this project does not register
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        from toil.test.batchSystems import (
            batchSystemTest as bst,  # the module: never its classes
        )
finally:
    os.environ["PATH"] = _saved_path

from plastic.framework.toil_batch import PlasticBatchSystem

RELIABLE_CORES = max(bst.numCores, bst.AbstractBatchSystemJobTest.cpuCount)
SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": RELIABLE_CORES, "ram_mib": 4096, "preemptible": False},
    {"name": "burst", "count": 1, "cpus": 2, "ram_mib": 2048, "preemptible": True},
]}


@pytest.fixture(scope="class")
def rootpath(request: pytest.FixtureRequest) -> None:
    request.cls._rootpath = request.config.rootpath


@contextlib.contextmanager
def _environment() -> Iterator[None]:
    """PATH with the venv's bin (the agents find _toil_worker there) and the rsync stub, for the
    cluster (its agents start tasks with its environment) and for the leader (Toil's workers merge
    the leader's PATH)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", _test_path())
        yield


@pytest.fixture(scope="class")
def plastic_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    with _environment(), LocalCluster(SPEC, agent_ping_timeout_s=2.0) as cluster:
        request.cls.cluster = cluster
        yield cluster


@pytest.mark.usefixtures("plastic_cluster")
class TestPlasticBatchSystem(bst.hidden.AbstractBatchSystemTest):
    """Toil's AbstractBatchSystemTest (test_available_cores, test_run_jobs, test_set_env,
    test_set_job_env, testCheckResourceRequest, testScalableBatchSystem), plus ignoreNode."""

    cluster: LocalCluster

    def supportsWallTime(self) -> bool:
        return True

    def _createConfig(self):
        config = super()._createConfig()
        config.plastic_master = self.cluster.master_url
        return config

    def createBatchSystem(self) -> PlasticBatchSystem:
        # maxDisk 1001: the 1000-byte default jobs fit, testCheckResourceRequest's 2G does not
        return PlasticBatchSystem(config=self.config, maxCores=bst.numCores, maxMemory=1e9, maxDisk=1001)

    def test_ignore_node(self) -> None:
        """Like Toil's MesosBatchSystemTest.testIgnoreNode, with plastic's ip:port node names: a job
        does not start while every reliable node is ignored, and starts once one is unignored."""
        deadline = time.monotonic() + 20
        while not (nodes := self.batchSystem.getNodes(preemptible=False)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert nodes, "getNodes() never listed the reliable agent"
        for address in nodes:
            self.batchSystem.ignoreNode(address)
        job_desc = self._mockJobDescription(jobName="test-ignored", unitName=None, jobStoreID="1",
                                            requirements=bst.defaultRequirements)
        job = self.batchSystem.issueBatchJob("sleep 1000", job_desc)
        self.assertEqual(set(self._waitForJobsToIssue(1)), {job})
        self.assertEqual(self._waitForJobsToStart(1, tries=6), [])
        for address in nodes:
            self.batchSystem.unignoreNode(address)
        self.assertEqual(self._waitForJobsToStart(1, tries=30), [job])
        self.batchSystem.killBatchJobs([job])
        self.assertEqual(self.batchSystem.getRunningBatchJobIDs(), {})


    def test_a_driver_that_gives_up_ends_the_leader(self) -> None:
        """The driver's error callback (it aborted: a refused re-SUBSCRIBE) makes getUpdatedBatchJob raise
        at once; the leader had waited forever on a driver that no longer ran (make test-compose)."""
        from plastic.mesos.driver_errors import MesosFrameworkError

        assert self.batchSystem.getUpdatedBatchJob(0) is None
        self.batchSystem.framework.error(None, "SUBSCRIBE refused: HTTP 404: 404 Not Found.")
        started = time.monotonic()
        with self.assertRaises(MesosFrameworkError) as caught:
            self.batchSystem.getUpdatedBatchJob(30)
        assert time.monotonic() - started < 5 and "404 Not Found" in str(caught.exception)


@pytest.mark.usefixtures("plastic_cluster")
class TestPlasticBatchSystemJobs(bst.AbstractBatchSystemJobTest):
    """Toil's AbstractBatchSystemJobTest: testJobConcurrency (slow) and test_omp_threads."""

    cluster: LocalCluster

    def getBatchSystemName(self) -> str:
        return "plastic"

    def getOptions(self, tempDir: Path):
        options = super().getOptions(tempDir)
        options.plastic_master = self.cluster.master_url
        options.logLevel = "INFO"
        return options
