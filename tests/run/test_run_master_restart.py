"""The Mesos master SIGKILLed and started again while `plastic run --master URL` runs tasks.

The local cluster's master restart is a failover in which no agent re-registers: a new master id,
fresh agents, the old tasks gone.  The framework re-subscribes with the same framework id, the tasks
it had running are reconciled (the new master does not know them: TASK_UNKNOWN), run again on the
new agents, and the run completes: right output, one FINISHED per Toil job, and the decisions log
shows the re-registration and the requeues.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

from plastic.local.testing import LocalCluster
from tests.clirun import REPO, read_decisions

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

DATA = REPO / "tests" / "watch" / "data" / "slow-scatter"
SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 2, "ram_mib": 4096, "preemptible": False, "instance_type": "c5.large"},
    {"name": "burst", "count": 2, "cpus": 2, "ram_mib": 4096, "preemptible": True, "instance_type": "c5.large"},
]}


def test_master_killed_and_restarted_mid_run(tmp_path):
    job = tmp_path / "job.yml"
    job.write_text("items: [1, 2, 3]\nseconds: 10\n")
    run_dir, out = tmp_path / "run", tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    with LocalCluster(SPEC, agent_ping_timeout_s=2.0, heartbeat_s=1.0) as cluster:
        cmd = [sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(job), "--outdir",
               str(out), "--run-dir", str(run_dir), "--quiet", "--master", cluster.master_url]
        with open(tmp_path / "run.log", "wb") as log:
            proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 90
            while sum(d["kind"] == "running" for d in read_decisions(run_dir)) < 3:
                assert proc.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the three tasks did not run within 90 s"
                time.sleep(0.2)
            old_agents = {a.id for a in cluster.agents}
            cluster.restart_master(downtime_s=2.0)
            assert not old_agents & {a.id for a in cluster.agents}
            rc = proc.wait(240)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    log_text = (tmp_path / "run.log").read_text(errors="replace")
    assert rc == 0, log_text[-3000:] + (run_dir / "toil.log").read_text()[-3000:]
    assert (out / "joined.txt").read_text() == "item 1\nitem 2\nitem 3\n"
    decisions = read_decisions(run_dir)
    # one framework throughout: subscribed once, then re-subscribed under the same id (no new "registered")
    assert sum(d["kind"] == "registered" for d in decisions) == 1
    assert any(d["kind"] == "reconnected" for d in decisions)
    # the three running tasks, unknown to the new master, were reconciled and run again
    unknown = {d["event"]["mesos_task_id"] for d in decisions if d["kind"] == "event"
               and d["event"]["type"] == "StatusReceived" and d["event"]["state"] == "TASK_UNKNOWN"}
    requeued = {d["old_task"] for d in decisions if d["kind"] == "requeue"}
    assert len(requeued) == 3 and requeued <= unknown, (requeued, unknown)
    finished = Counter(d["job_id"] for d in decisions if d["kind"] == "ended" and d.get("outcome") == "finished")
    assert finished and all(n == 1 for n in finished.values()), finished
    report = json.loads((run_dir / "report.json").read_text())
    assert report["tasks"] == report["tasks_finished"] == 4, report
