"""A local cluster never outlives whoever started it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from plastic.local.supervisor import marked_pids, pid_alive
from tests.waiting import eventually

REPO = Path(__file__).resolve().parents[2]

OWNER = """
import json, sys, time
from plastic.local.handle import LocalCluster
from tests.local.rawmesos import Scheduler, attrs
c = LocalCluster(sys.argv[1]).start()
s = Scheduler(c.master_url)
s.subscribe()
s.launch("held", "sleep 300", pred=lambda o: attrs(o)["cluster"] == "core")
st = s.wait_update("held", "TASK_RUNNING")
print(json.dumps({"pid": c.pid, "cluster_id": c.cluster_id, "task_pid": st["container_status"]["executor_pid"]}),
      flush=True)
time.sleep(600)
"""


def test_cluster_stops_when_its_owner_is_killed():
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(REPO / "deploy" / "cluster-example.yaml")],
                             stdout=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True)
    try:
        info = json.loads(owner.stdout.readline())
        assert pid_alive(info["pid"]) and pid_alive(info["task_pid"])
        os.killpg(owner.pid, signal.SIGKILL)  # no chance to clean up: the cluster must notice by itself
        owner.wait(timeout=10)
        eventually(lambda: not pid_alive(info["pid"]), timeout=15, what="the orphaned cluster to stop")
        eventually(lambda: not pid_alive(info["task_pid"]), timeout=5, what="its task to die")
        assert marked_pids(info["cluster_id"]) == []
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
