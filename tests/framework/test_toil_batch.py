"""ReportJobEnd -> UpdatedBatchJobInfo, the plugin's registration, and its options (policy, Redis, run)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from argparse import ArgumentTypeError
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("toil")

from toil.batchSystems.abstractBatchSystem import BatchJobExitReason
from toil.common import Config, InconsistentConfigurationError

from plastic.core.book.commands import ReportJobEnd
from plastic.core.book.policy import POLICY_VERSION, PolicyError
from plastic.core.model import RELIABLE, Preempt
from plastic.framework.run_store import load_policy, open_run
from plastic.framework.toil_batch import (
    NOTHING_ISSUED_WAIT_S,
    PlasticBatchSystem,
    update_wait_s,
    updated_info,
)
from plastic.framework.toil_options import config_or_env, open_run_from, policy_file
from plastic.store import StoreError


def test_the_leader_waits_for_an_update_only_while_a_job_is_out():
    """Toil's leader asks with maxWait=2 at every turn, also while it only cleans up finished jobs (one
    per turn at a run's end): with nothing issued no update can come, so it is asked back at once."""
    assert update_wait_s(2, anything_issued=True) == 2
    assert update_wait_s(2, anything_issued=False) == NOTHING_ISSUED_WAIT_S < 0.1  # > 0: a backoff must not spin
    assert update_wait_s(0, anything_issued=False) == 0 == update_wait_s(-1, anything_issued=True)


@pytest.mark.parametrize(("outcome", "code", "status", "reason"), [
    ("finished", 0, 0, BatchJobExitReason.FINISHED),
    ("failed", 3, 3, BatchJobExitReason.FAILED),
    ("killed", 255, 255, BatchJobExitReason.KILLED),
    ("lost_for_good", 255, 255, BatchJobExitReason.LOST),
])
def test_updated_info(outcome, code, status, reason):
    info = updated_info(ReportJobEnd("12", outcome, code, 1.5, "12.2"))
    assert (info.jobID, info.exitStatus, info.exitReason, info.wallTime, info.backing_id) == \
        (12, status, reason, 1.5, "12.2")


def test_registered_and_flags():
    from toil.batchSystems.registry import get_batch_system

    import toil_batch_system_plastic

    assert toil_batch_system_plastic.plastic_batch_system_factory() is PlasticBatchSystem
    assert get_batch_system("plastic") is PlasticBatchSystem
    assert PlasticBatchSystem.supportsAutoDeployment() is False
    assert PlasticBatchSystem.supportsWorkerCleanup() is True


# ------------------------------------------------------------------ options: policy, Redis, run

REPO = Path(__file__).resolve().parents[2]
GOOD = {"version": POLICY_VERSION, "tools": {"plastic_sort": {"preempt": 0, "step": "main/sort"},
                                             "plastic_split": {"preempt": 2, "instance_type": "c5.large"}}}


def write(path: Path, doc) -> Path:
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_policy_file_option(tmp_path):
    good = write(tmp_path / "p.json", GOOD)
    assert policy_file(str(good)) == str(good)
    table = load_policy(good)
    assert table.tools["plastic_sort"].preempt == RELIABLE and table.tools["plastic_split"].preempt == Preempt(2)
    bad = write(tmp_path / "bad.json", {"version": POLICY_VERSION, "tools": {"x": {"preempt": "often"}}})
    with pytest.raises(ArgumentTypeError, match=rf"^{bad}: tools.x.preempt: must be true, false or an integer"):
        policy_file(str(bad))
    with pytest.raises(PolicyError, match=r"missing.json: cannot read the policy file: No such file"):
        load_policy(tmp_path / "missing.json")


def test_constructor_refuses_bad_configuration_before_starting_anything(tmp_path, monkeypatch):
    for name in ("PLASTIC_POLICY", "PLASTIC_REDIS_URL", "PLASTIC_RUN_ID", "PLASTIC_MASTER", "PLASTIC_MASTER_URL"):
        monkeypatch.delenv(name, raising=False)
    config = Config()
    config.workflowID = "wf"
    with pytest.raises(InconsistentConfigurationError, match="needs --plasticMaster"):
        PlasticBatchSystem(config, 2, 1e9, 1e9)
    config.plastic_master = "http://127.0.0.1:1"
    config.plastic_policy = str(write(tmp_path / "bad.json", "{"))
    with pytest.raises(InconsistentConfigurationError, match=r"bad.json: not valid JSON"):
        PlasticBatchSystem(config, 2, 1e9, 1e9)
    config.plastic_policy = None
    config.plastic_redis = "redis://127.0.0.1:1/0"
    with pytest.raises(InconsistentConfigurationError, match=r"cannot reach Redis at redis://127.0.0.1:1/0"):
        PlasticBatchSystem(config, 2, 1e9, 1e9)
    config.plastic_redis_ca = str(tmp_path / "missing-ca.pem")  # --plasticRedisCa
    with pytest.raises(InconsistentConfigurationError, match=r"--plasticRedisCa.* goes with a rediss://"):
        PlasticBatchSystem(config, 2, 1e9, 1e9)
    config.plastic_redis = "rediss://:S3cret@127.0.0.1:1/0"
    with pytest.raises(InconsistentConfigurationError, match=r"missing-ca.pem: --plasticRedisCa: cannot read"):
        PlasticBatchSystem(config, 2, 1e9, 1e9)


def test_open_run_creates_or_finds_the_run(redis_server, caplog):
    caplog.set_level(logging.INFO, logger="plastic.framework.run_store")
    url = redis_server.url
    prefix = f"t-{os.getpid()}-{id(caplog)}:"
    fresh = open_run(url, None, fields={"source": "toil"}, prefix=prefix)
    try:
        assert fresh.created and fresh.store.get_run(fresh.run_id).fields["source"] == "toil"
        assert f"new run {fresh.run_id}" in caplog.text
    finally:
        fresh.close()
    named = open_run(url, "r-named", prefix=prefix)
    try:
        assert named.created and named.store.get_run("r-named") is not None
    finally:
        named.close()
    again = open_run(url, "r-named", prefix=prefix)
    try:
        assert not again.created
    finally:
        again.close()
    with pytest.raises(StoreError, match=r"^--plasticRun: invalid run id 'bad id'"):
        open_run(url, "bad id", prefix=prefix)


def test_toil_options_from_config_and_environment(monkeypatch):
    monkeypatch.setenv("PLASTIC_RUN_ID", "from-env")
    assert config_or_env(SimpleNamespace(), "plastic_run", "PLASTIC_RUN_ID") == "from-env"
    assert config_or_env(SimpleNamespace(plastic_run="given"), "plastic_run", "PLASTIC_RUN_ID") == "given"
    assert open_run_from(SimpleNamespace(plastic_redis=None, plastic_run="x")) is None


def test_bad_policy_stops_toil_cwl_runner_with_one_line(tmp_path):
    bad = write(tmp_path / "policy.json", {"version": POLICY_VERSION, "tools": {"a.b": {}}})
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "toil-cwl-runner"), "--batchSystem", "plastic", "--plasticMaster",
         "http://127.0.0.1:1", "--plasticPolicy", str(bad), "--jobStore", f"file:{tmp_path / 'js'}",
         str(REPO / "cwl-examples" / "scatter-gather" / "scatter-gather.cwl")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, proc.stderr
    assert str(bad) in errors[0] and "tools.a.b" in errors[0] and "dot-free" in errors[0]
    assert not (tmp_path / "js").exists()  # refused before anything was started
