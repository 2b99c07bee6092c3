"""JobEnded -> UpdatedBatchJobInfo, and the plugin's registration."""

from __future__ import annotations

import pytest

pytest.importorskip("toil")

from toil.batchSystems.abstractBatchSystem import BatchJobExitReason  # noqa: E402

from plastic.core.jobbook_messages import JobEnded  # noqa: E402
from plastic.framework.toil_batch import PlasticBatchSystem, updated_info  # noqa: E402


@pytest.mark.parametrize(("outcome", "code", "status", "reason"), [
    ("finished", 0, 0, BatchJobExitReason.FINISHED),
    ("failed", 3, 3, BatchJobExitReason.FAILED),
    ("killed", 255, 255, BatchJobExitReason.KILLED),
    ("lost_for_good", 255, 255, BatchJobExitReason.LOST),
])
def test_updated_info(outcome, code, status, reason):
    info = updated_info(JobEnded("12", outcome, code, 1.5, "12.2"))
    assert (info.jobID, info.exitStatus, info.exitReason, info.wallTime, info.backing_id) == \
        (12, status, reason, 1.5, "12.2")


def test_registered_and_flags():
    from toil.batchSystems.registry import get_batch_system

    import toil_batch_system_plastic

    assert toil_batch_system_plastic.plastic_batch_system_factory() is PlasticBatchSystem
    assert get_batch_system("plastic") is PlasticBatchSystem
    assert PlasticBatchSystem.supportsAutoDeployment() is False
    assert PlasticBatchSystem.supportsWorkerCleanup() is True
