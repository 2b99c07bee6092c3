"""plastic's executor on the local cluster: the scenarios every master runs, then what only the local
cluster lets a test do (find the executor's process, kill it) and the agent's side of the executor API."""

from __future__ import annotations

import json
import os
import signal
import sys

import httpx
import pytest

from plastic.procs import pid_alive
from tests.local.executor_scenarios import (  # collected here too: they run against any master
    core_offer,
    executor_task,
    failure_of,
    launch,
    test_a_failed_task_says_its_exit_and_its_last_line_of_standard_error,  # noqa: F401
    test_a_killed_task_ends_killed,  # noqa: F401
    test_a_task_reports_what_it_used,  # noqa: F401
    test_an_idle_executor_leaves_and_its_share_comes_back,  # noqa: F401
    test_another_frameworks_idle_executor_leaves_room_for_a_whole_agent_task,  # noqa: F401
    test_tasks_share_one_executor_on_an_agent_which_offers_then_name,  # noqa: F401
)
from tests.local.rawmesos import raw_request
from tests.waiting import eventually

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def executor_command() -> str:
    return f"{sys.executable} -m plastic.executor"


def _agent(cluster, agent_id: str) -> dict:
    """The local cluster's summary of an agent, by id or by index ("0": the first)."""
    agents = httpx.get(f"{cluster.master_url}/plastic/status", timeout=10).json()["agents"]
    return next(a for a in agents if a["id"] == agent_id or a["id"].endswith(f"-S{agent_id}"))


def _executor_pids(cluster, agent_id: str) -> list[int]:
    """The agent's executor processes (its pids that run plastic.executor)."""
    out = []
    for pid in _agent(cluster, agent_id)["pids"]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"plastic.executor" in fh.read():
                    out.append(pid)
        except OSError:
            pass
    return out


def test_an_executor_killed_fails_its_tasks_and_the_framework_hears_of_it(fresh_cluster, scheduler,
                                                                          executor_command):
    s = scheduler(fresh_cluster.master_url, "executor-dies")
    offer = core_offer(s)
    agent = offer["agent_id"]["value"]
    launch(s, offer, [executor_task("dies-1", agent, "sleep 60", executor_command)])
    s.wait_update("dies-1", "TASK_RUNNING", timeout=30)
    (pid,) = _executor_pids(fresh_cluster, agent)
    os.kill(pid, signal.SIGKILL)
    st = s.wait_update("dies-1", "TASK_FAILED", timeout=30)
    assert (st["source"], st["reason"], st["message"]) == ("SOURCE_AGENT", "REASON_EXECUTOR_TERMINATED",
                                                           "Executor terminated")
    failure = failure_of(s, "plastic")
    assert failure["agent_id"]["value"] == agent and failure["status"] == -9


def test_teardown_shuts_the_executor_down_with_its_tasks(fresh_cluster, scheduler, executor_command):
    s = scheduler(fresh_cluster.master_url, "executor-teardown")
    offer = core_offer(s)
    agent = offer["agent_id"]["value"]
    launch(s, offer, [executor_task("td-1", agent, "sleep 60", executor_command)])
    s.wait_update("td-1", "TASK_RUNNING", timeout=30)
    (pid,) = _executor_pids(fresh_cluster, agent)
    assert s.call("TEARDOWN").status_code == 202
    eventually(lambda: not pid_alive(pid) and not _agent(fresh_cluster, agent)["pids"], timeout=30,
               what="the executor and its task to be gone")


@pytest.mark.parametrize(("method", "headers", "body", "status", "text"), [
    ("GET", [], b"", 405, "Expecting one of { 'POST' }, but received 'GET'"),
    ("POST", [], b"{}", 400, "Expecting 'Content-Type' to be present"),
    ("POST", [("Content-Type", "text/plain")], b"{}", 415,
     "Expecting 'Content-Type' of application/json or application/x-protobuf"),
    ("POST", [("Content-Type", "application/json")], b"{", 400, "Failed to parse body into JSON"),
    ("POST", [("Content-Type", "application/json")],
     json.dumps({"type": "SUBSCRIBE", "framework_id": {"value": "nope"}, "executor_id": {"value": "plastic"},
                 "subscribe": {}}).encode(), 400, "Framework cannot be found"),
    ("POST", [("Content-Type", "application/json")],
     json.dumps({"type": "UPDATE", "framework_id": {"value": "f"}, "executor_id": {"value": "e"},
                 "update": {"status": {"task_id": {"value": "t"}, "state": "TASK_RUNNING",
                                       "source": "SOURCE_EXECUTOR"}}}).encode(),
     400, "Failed to validate Executor::Call: Expecting 'uuid' to be present"),
])
def test_the_agent_answers_bad_executor_calls_as_mesos_does(cluster, method, headers, body, status, text):
    agent = _agent(cluster, "0")
    code, _, rest = raw_request(f"http://127.0.0.1:{agent['port']}", method, "/api/v1/executor", body, headers)
    assert code == status
    assert text in rest.decode()


def test_an_agent_restart_is_waited_out_and_the_task_ends_once(fresh_cluster, scheduler, executor_command, tmp_path):
    """Framework checkpointing on: the executor keeps its task through the agent's restart, re-subscribes
    with what the agent has not acknowledged, and the task's end arrives once."""
    s = scheduler(fresh_cluster.master_url, "executor-restart", subscribe=False)
    s.body["subscribe"]["framework_info"]["checkpoint"] = True
    s.subscribe()
    offer = core_offer(s)
    agent = offer["agent_id"]["value"]
    marker = tmp_path / "restart-marker"
    launch(s, offer, [executor_task("rs-1", agent, f"sleep 2; echo once >> {marker}", executor_command)])
    s.wait_update("rs-1", "TASK_RUNNING", timeout=30)
    (pid,) = _executor_pids(fresh_cluster, agent)
    fresh_cluster.restart_agent(agent, 4.0)  # the task ends while the agent is away
    st = s.wait_update("rs-1", "TASK_FINISHED", timeout=60)
    assert st["source"] == "SOURCE_EXECUTOR"
    assert _executor_pids(fresh_cluster, agent) == [pid]  # the same executor, through the restart
    assert [u["state"] for u in s.updates("rs-1")].count("TASK_FINISHED") == 1
    assert marker.read_text() == "once\n"


def test_the_framework_shuts_its_executor_down(fresh_cluster, scheduler, executor_command):
    s = scheduler(fresh_cluster.master_url, "executor-shutdown")
    offer = core_offer(s)
    agent = offer["agent_id"]["value"]
    launch(s, offer, [executor_task("sd-1", agent, "sleep 60", executor_command)])
    s.wait_update("sd-1", "TASK_RUNNING", timeout=30)
    (pid,) = _executor_pids(fresh_cluster, agent)
    assert s.call("SHUTDOWN", shutdown={"executor_id": {"value": "plastic"},
                                        "agent_id": {"value": agent}}).status_code == 202
    killed = s.wait_update("sd-1", "TASK_KILLED", timeout=30)
    assert killed["reason"] == "REASON_EXECUTOR_TERMINATED"
    eventually(lambda: not pid_alive(pid), timeout=30, what="the executor to leave")
