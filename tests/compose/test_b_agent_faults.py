"""A Mesos 1.11 agent failing under a running workflow (`make test-compose`): its process SIGKILLed
and started again while its executor runs tasks (they carry on and finish once, nothing is
requeued), and its machine killed outright (its tasks are requeued elsewhere and done once)."""

from __future__ import annotations

import subprocess

from tests.compose.helpers import (
    busy_spot_agent,
    long_job,
    master_state,
    running_tasks,
    submit,
    wait_run,
    work_done_once,
)
from tests.waiting import eventually

ITEMS = 8


def agent_pid(container: str) -> int | None:
    res = subprocess.run(["docker", "exec", container, "pgrep", "-x", "mesos-agent"], capture_output=True, text=True)
    return int(res.stdout.split()[0]) if res.returncode == 0 and res.stdout.split() else None


def busy_agent_of(run_id: str) -> dict:
    return eventually(busy_spot_agent, 300, f"a spot agent running {run_id}'s tasks", interval=1)


def test_an_agent_restarted_mid_task_keeps_its_tasks_and_they_finish_once(cluster, tmp_path):
    """The agent's process SIGKILLed; spot-run (its machine's init) starts it again, the agent recovers
    from its checkpoints, plastic's executor re-subscribes with its tasks, and they finish there."""
    where = long_job(tmp_path, seconds=25, items=ITEMS)
    run_id = submit(cluster, f"{where}/square-sum.cwl", f"{where}/job.yml", "/plastic-runs/out-agent-restarted")
    agent = busy_agent_of(run_id)
    name = agent["attributes"]["cluster"]
    container = cluster.container(name)
    tasks = running_tasks().get(agent["id"], set())
    old = agent_pid(container)
    assert tasks and old, (tasks, old)
    subprocess.run(["docker", "exec", container, "kill", "-KILL", str(old)], check=True, capture_output=True)
    eventually(lambda: agent_pid(container) not in (None, old), 60, "spot-run to start the agent again")
    st = wait_run(cluster, run_id)
    assert st["state"] == "SUCCEEDED", st
    log = work_done_once(run_id, "out-agent-restarted", ITEMS)
    assert not [d for d in log if d["kind"] in ("requeue", "agent_lost") and d.get("agent_id") == agent["id"]]
    ended = {f"{d['job_id']}.{d['attempt']}": d for d in log if d["kind"] == "ended"}
    for task in tasks:  # the tasks that ran through the restart finished where they were, first time
        assert ended[task]["outcome"] == "finished" and ended[task]["agent_id"] == agent["id"], ended.get(task)
    state = master_state()
    assert agent["id"] in {a["id"] for a in state["slaves"] if a["active"]}  # the same agent, re-registered
    assert cluster.health()[name] == "healthy"


def test_an_agent_machine_killed_mid_task_has_its_tasks_requeued_and_done_once(cluster, tmp_path):
    """The whole machine (the agent's container) SIGKILLed with tasks running: the master's ping timeout
    finds it gone, plastic requeues its tasks onto the other agents and the run completes."""
    where = long_job(tmp_path, seconds=25, items=ITEMS)
    run_id = submit(cluster, f"{where}/square-sum.cwl", f"{where}/job.yml", "/plastic-runs/out-agent-killed")
    agent = busy_agent_of(run_id)
    name = agent["attributes"]["cluster"]
    tasks = running_tasks().get(agent["id"], set())
    assert tasks
    subprocess.run(["docker", "kill", "-s", "KILL", cluster.container(name)], check=True, capture_output=True)
    try:
        st = wait_run(cluster, run_id)
        assert st["state"] == "SUCCEEDED", st
        log = work_done_once(run_id, "out-agent-killed", ITEMS)
        requeued = {f"{d['job_id']}" for d in log if d["kind"] == "requeue" and d.get("agent_id") == agent["id"]}
        assert {t.split(".")[0] for t in tasks} <= requeued, (tasks, requeued)
    finally:  # a new machine for the tests after this one
        cluster.run("up", "-d", "--no-deps", "--force-recreate", name)
        cluster.wait_healthy({name})
