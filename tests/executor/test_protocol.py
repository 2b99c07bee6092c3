"""plastic's executor: the agent's environment and the executor API's JSON (plastic.executor.protocol)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest

from plastic.core.executor.messages import SendUpdate
from plastic.core.model import TaskUsage
from plastic.executor.protocol import (
    ExecutorEnvironmentError,
    command_of,
    duration_s,
    environment_of,
    event_of,
    status_of,
    task_data,
    usage_of,
)

ENV = {"MESOS_AGENT_ENDPOINT": "127.0.0.1:5051", "MESOS_FRAMEWORK_ID": "fw", "MESOS_EXECUTOR_ID": "plastic",
       "MESOS_DIRECTORY": "/tmp/x", "MESOS_SLAVE_ID": "a1", "MESOS_CHECKPOINT": "1",
       "MESOS_RECOVERY_TIMEOUT": "15mins", "MESOS_SUBSCRIPTION_BACKOFF_MAX": "2secs",
       "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD": "5secs"}


def test_the_agents_environment():
    env = environment_of(ENV, idle_s=30, kill_grace_s=2)
    assert (env.agent_endpoint, env.framework_id, env.executor_id, env.agent_id) == ("127.0.0.1:5051", "fw",
                                                                                     "plastic", "a1")
    s = env.settings
    assert (s.checkpoint, s.recovery_timeout_s, s.subscription_backoff_max_s, s.shutdown_grace_s, s.idle_s) == (
        True, 900.0, 2.0, 5.0, 30)


@pytest.mark.parametrize(("text", "seconds"), [("15mins", 900.0), ("2secs", 2.0), ("500ms", 0.5), ("1.5hrs", 5400.0)])
def test_durations_as_the_agent_writes_them(text, seconds):
    assert duration_s(text, "X") == seconds


def test_a_bad_environment_is_one_clear_error():
    with pytest.raises(ExecutorEnvironmentError, match="MESOS_RECOVERY_TIMEOUT.*not a duration"):
        environment_of({**ENV, "MESOS_RECOVERY_TIMEOUT": "soon"}, idle_s=1, kill_grace_s=1)
    with pytest.raises(ExecutorEnvironmentError, match="not started by a Mesos agent"):
        environment_of({}, idle_s=1, kill_grace_s=1)


def test_plastic_executor_outside_an_agent_says_so_in_one_line():
    res = subprocess.run([sys.executable, "-m", "plastic", "executor"], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "plastic: MESOS_AGENT_ENDPOINT: not started by a Mesos agent: MESOS_AGENT_ENDPOINT, MESOS_FRAMEWORK_ID, "
        "MESOS_EXECUTOR_ID, MESOS_DIRECTORY not set"]


def test_a_tasks_command_rides_in_its_data():
    cmd = {"value": "echo hi", "shell": True, "environment": {"variables": [{"name": "A", "value": "1"}]}}
    assert command_of({"data": task_data(cmd)}) == cmd
    assert command_of({"command": {"value": "true"}}) == {"value": "true"}
    with pytest.raises(ValueError, match="names no command"):
        command_of({"data": base64.b64encode(b"{}").decode()})


def test_events_of_the_stream():
    ev, task = event_of({"type": "LAUNCH", "launch": {"task": {"task_id": {"value": "t1"},
                         "kill_policy": {"grace_period": {"nanoseconds": 2_500_000_000}}}}}, 5.0)
    assert (ev.task_id, ev.grace_s, ev.now, task["task_id"]) == ("t1", 2.5, 5.0, {"value": "t1"})
    ev, _ = event_of({"type": "ACKNOWLEDGED", "acknowledged": {"task_id": {"value": "t1"},
                                                               "uuid": base64.b64encode(b"u" * 16).decode()}}, 1.0)
    assert ev.uuid == b"u" * 16
    assert event_of({"type": "HEARTBEAT"}, 1.0) == (None, None)


def test_a_terminal_status_carries_the_usage_and_reads_back():
    env = environment_of(ENV, idle_s=30, kill_grace_s=2)
    usage = TaskUsage(1.5, 120.25, 2.0)
    st = status_of(SendUpdate("t1", "TASK_FINISHED", b"\x01" * 16, message="done", usage=usage, timestamp=3.0), env)
    assert (st["source"], st["executor_id"], st["agent_id"]) == ("SOURCE_EXECUTOR", {"value": "plastic"},
                                                                 {"value": "a1"})
    assert json.loads(base64.b64decode(st["data"])) == {"plastic_usage": {"cpu_s": 1.5, "max_rss_mib": 120.25,
                                                                          "wall_s": 2.0}}
    assert usage_of(st) == usage
    assert usage_of({"data": base64.b64encode(b"not json").decode()}) is None
