"""Toil's generic batch-system tests, run against the plastic batch system on a local cluster.

Toil ships the tests every batch system should pass in its wheel
(toil.test.batchSystems.batchSystemTest): `hidden.AbstractBatchSystemTest` drives the batch system
directly (issue, run, kill, exit codes, setEnv, per-job environment, resource checks) and
`AbstractBatchSystemJobTest` runs whole Toil workflows through it (core accounting, OMP_NUM_THREADS).
See docs/design/toil-batch-system.md, section 5.  What they need here:

- `rsync` on PATH, or anything that exits non-zero: `import toil.test` runs `rsync --version` and
  only catches a non-zero exit.  Without rsync a stub is put first on PATH, for the import and for
  the Toil workers that import toil.test on the agents (the workflow tests' job functions live there).
- a class-scoped `rootpath` fixture (Toil's own lives in toil/test/conftest.py);
- the module imported, not its classes, or pytest would also collect Toil's concrete tests;
- one class-scoped LocalCluster per class, whose reliable agent has exactly
  `AbstractBatchSystemJobTest.cpuCount` cores (min(cpu count, 4)): testJobConcurrency asserts the
  peak concurrency *equals* cpuCount // cores, and test_run_jobs needs two 1-core jobs at once.
  A preemptible agent is there too; none of these jobs may use it (they are not preemptible).

testJobConcurrency (three rounds of 30 s sleeps, about 100 s) carries Toil's own `slow` mark:
deselect it with `-m "not slow"` (or TOIL_TEST_QUICK=True).
"""

from __future__ import annotations

import pytest

pytest.importorskip("toil")

# the classes are collected here, the fixtures are theirs (tests/compose/test_c_toil_generic.py reuses them)
from tests.framework.toil_generic import (  # noqa: E402, F401  (after the skip: it imports toil.test)
    TestPlasticBatchSystem,
    TestPlasticBatchSystemJobs,
    plastic_cluster,
    rootpath,
)

pytestmark = pytest.mark.toil_e2e
