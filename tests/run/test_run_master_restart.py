"""The Mesos master SIGKILLed and started again while `plastic run --master URL` runs tasks.

The local cluster's master restart is a failover in which no agent re-registers: a new master id,
fresh agents, the old tasks gone.  The framework re-subscribes with the same framework id, the tasks
it had running are reconciled (the new master does not know them: TASK_UNKNOWN), run again on the
new agents, and the run completes: right output, one FINISHED per Toil job, and the decisions log
shows the re-registration and the requeues.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from plastic.local.handle import LocalCluster
from tests.clirun import SlowScatterRun, read_decisions

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 2, "ram_mib": 4096, "preemptible": False, "instance_type": "c5.large"},
    {"name": "burst", "count": 2, "cpus": 2, "ram_mib": 4096, "preemptible": True, "instance_type": "c5.large"},
]}


def test_master_killed_and_restarted_mid_run(tmp_path):
    with LocalCluster(SPEC, agent_ping_timeout_s=2.0, heartbeat_s=1.0) as cluster:
        run = SlowScatterRun(tmp_path, "--master", cluster.master_url, seconds=10)
        run.wait_running(tasks=3)
        old_agents = {a.id for a in cluster.agents}
        cluster.restart_master(downtime_s=2.0)
        assert not old_agents & {a.id for a in cluster.agents}
        run.finish()
    decisions = read_decisions(run.run_dir)
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
    report = json.loads((run.run_dir / "report.json").read_text())
    assert report["tasks"] == report["tasks_finished"] == 4, report
