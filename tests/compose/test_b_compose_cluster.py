"""The compose cluster end to end on real Apache Mesos 1.11 (`make test-compose`): the examples
through the manager, placement checked on the real master, a spot interruption, the manager killed
mid-run, and `down -v` leaving nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from plastic.compose import imds_port
from tests.clirun import REPO
from tests.compose.helpers import (
    RUNS,
    busy_spot_agent,
    decisions,
    long_job,
    master_state,
    master_tasks,
    submit,
    wait_run,
    work_done_once,
)
from tests.waiting import eventually

EXAMPLES = REPO / "cwl-examples"
IN_IMAGE = "/opt/plastic-examples"


def check_outputs(example: str, outdir: Path) -> None:
    expected = json.loads((EXAMPLES / example / "expected-output.json").read_text())
    for name, want in expected.items():
        got = outdir / want["basename"]
        assert got.is_file(), (name, sorted(p.name for p in outdir.iterdir()))
        assert got.stat().st_size == want["size"], name


@pytest.mark.parametrize("example", ["scatter-gather", "nested-scatter", "dynamic-resources"])
def test_examples_through_the_manager_and_reliable_steps_on_the_core_agent(cluster, example):
    t0 = time.monotonic()
    run_id = submit(cluster, f"{IN_IMAGE}/{example}/{example}.cwl", f"{IN_IMAGE}/{example}/job.yml",
                    f"/plastic-runs/out-{example}")
    st = wait_run(cluster, run_id)
    assert st["state"] == "SUCCEEDED", st
    print(f"{example}: {time.monotonic() - t0:.1f} s from submit to SUCCEEDED on the compose cluster, "
          f"makespan {st.get('makespan_s', '?')} s, cost {st.get('cost_usd', '?')} USD")
    check_outputs(example, RUNS / f"out-{example}")
    # the manager's init reaps what the leader's local jobs leave (without one, Toil waited 5 s on each)
    assert "were not reaped" not in (RUNS / "runs" / run_id / "toil.log").read_text()
    # the real master's view: every task of a preempt=false step ran on the core agent
    state = master_state()
    agents = {a["id"]: {x: str(v) for x, v in a["attributes"].items()} for a in
              state["slaves"] + state.get("recovered_slaves", [])}
    frameworks = {d["framework_id"] for d in decisions(run_id) if d["kind"] == "registered"}
    assert frameworks, "the run never registered with the master"
    # task ids are per run (job.attempt): only this run's frameworks' tasks
    ran_on = {t["id"]: t["slave_id"] for t in master_tasks() if t["framework_id"] in frameworks}
    run_dir = RUNS / "runs" / run_id
    policy = json.loads((run_dir / "workflow" / "policy.json").read_text())["tools"]
    reliable = {k for k, e in policy.items() if e["preempt"] in (False, 0)}
    issued = {str(d["job_id"]): d for d in decisions(run_id) if d["kind"] == "issued"}
    checked = 0
    for d in decisions(run_id):
        if d["kind"] != "placed":
            continue
        assert ran_on.get(d["task"]) == d["agent_id"], d  # the master ran it where plastic placed it
        if (issued[str(d["job_id"])].get("tool") or "").rsplit(".", 1)[-1] in reliable:
            assert agents[d["agent_id"]]["cluster"] == "core" and agents[d["agent_id"]]["preemptible"] == "false", d
            checked += 1
    assert checked >= 1 or not reliable


def test_a_spot_interruption_requeues_the_agents_tasks_and_the_run_completes(cluster, tmp_path):
    where = long_job(tmp_path, seconds=20, items=16)
    run_id = submit(cluster, f"{where}/square-sum.cwl", f"{where}/job.yml", "/plastic-runs/out-interrupted")
    deadline = time.monotonic() + 300
    while (agent := busy_spot_agent()) is None:
        assert time.monotonic() < deadline, "no spot agent ever ran a task"
        time.sleep(1)
    name = agent["attributes"]["cluster"]
    port = imds_port(int(agent["pid"].rsplit(":", 1)[1]))  # its emulator
    cluster.plastic("imds", "interrupt", f"http://127.0.0.1:{port}", "--notice-seconds", "10")
    st = wait_run(cluster, run_id)
    assert st["state"] == "SUCCEEDED", st
    log = work_done_once(run_id, "out-interrupted", 16)
    notices = [d for d in log if d["kind"] == "notice" and d["agent_id"] == agent["id"]]
    assert notices, [d["kind"] for d in log][-50:]
    requeued = [d for d in log if d["kind"] in ("requeue", "drain_kill") and d.get("agent_id") == agent["id"]]
    assert requeued, "the doomed agent's tasks went elsewhere"
    gone = cluster.run("ps", "-a", name).stdout
    assert "Exit 137" in gone or "exited (137)" in gone.lower(), gone  # spot-run took the machine
    # a new machine for the remaining tests, with its own metadata (the old emulator still says "terminate")
    cluster.run("up", "-d", "--no-deps", "--force-recreate", f"{name}-imds", name, f"{name}-watch")
    cluster.wait_healthy({name})


def crash_once(cluster, service: str, run_id: str, *, once: str) -> None:
    """Once the run has a ``once`` record, SIGKILL the service's main process (a crash, not a `docker
    stop`: the restart policy applies) and wait until it is restarted and healthy again."""
    deadline = time.monotonic() + 300
    while not any(d["kind"] == once for d in (decisions(run_id) if (RUNS / "runs" / run_id /
                                                                   "decisions.jsonl").exists() else [])):
        assert time.monotonic() < deadline, f"no {once} record"
        time.sleep(1)
    cid = cluster.container(service)
    pid = int(subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", cid], capture_output=True, text=True,
                             check=True).stdout)
    os.kill(pid, signal.SIGKILL)

    def restarts() -> int:
        return json.loads(subprocess.run(["docker", "inspect", cid], capture_output=True, text=True,
                                         check=True).stdout)[0]["RestartCount"]

    eventually(lambda: restarts() >= 1, 180, f"Docker to restart {service} after its SIGKILL", interval=0.5)
    cluster.wait_healthy({service}, timeout=180)


def test_the_master_killed_mid_run_restarts_and_the_run_completes(cluster, tmp_path):
    """A real Mesos master SIGKILLed while tasks run: the restart policy starts it again, it recovers
    its registry (replicated log) and its agents re-register with their tasks; the framework
    re-subscribes under the same id and reconciles, and the run completes."""
    where = long_job(tmp_path, seconds=20, items=8)
    run_id = submit(cluster, f"{where}/square-sum.cwl", f"{where}/job.yml", "/plastic-runs/out-master-killed")
    crash_once(cluster, "master", run_id, once="running")
    st = wait_run(cluster, run_id)
    assert st["state"] == "SUCCEEDED", st
    log = work_done_once(run_id, "out-master-killed", 8)
    assert sum(d["kind"] == "registered" for d in log) == 1, "a second framework was subscribed"
    assert any(d["kind"] == "reconnected" for d in log), [d["kind"] for d in log][-40:]


def test_the_manager_killed_mid_run_restarts_and_the_run_completes(cluster, tmp_path):
    """Submitted with the inputs as flags: the job order they make lives in the manager's home on the
    shared folder, and the resumed run reads it again."""
    where = long_job(tmp_path, seconds=15, items=8)
    items = [w for i in range(1, 9) for w in ("--items", str(i))]
    res = cluster.plastic("submit", f"{where}/square-sum.cwl", *items, "--seconds", "15",
                          "--outdir", "/plastic-runs/out-manager-killed")
    run_id = res.stdout.strip().splitlines()[-1]
    job = RUNS / "home" / "jobs" / f"{run_id}.json"
    assert json.loads(job.read_text()) == {"items": list(range(1, 9)), "seconds": 15}
    crash_once(cluster, "manager", run_id, once="placed")
    st = wait_run(cluster, run_id)
    assert st["state"] == "SUCCEEDED", st
    assert st["job"] == f"/plastic-runs/home/jobs/{run_id}.json"
    work_done_once(run_id, "out-manager-killed", 8)
