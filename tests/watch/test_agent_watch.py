"""`plastic agent-watch` (python -m plastic.watch) against the real IMDS endpoints of a LocalCluster's
spot agents, publishing into the session's real Redis.  Each test takes a few seconds."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from plastic.store import Store
from tests.clirun import REPO, assert_one_line_error
from tests.redis_servers import free_port
from tests.watch.helpers import Watcher, notices, wait_notices


@pytest.fixture
def store(client) -> Store:
    return Store(client)  # the default prefix, as the watcher writes; tests keep apart by target


def test_terminate_notice_published_once_and_the_watcher_leaves_after_the_deadline(cluster, store, redis_server):
    agent = cluster.agents[0]
    target = f"agent:{agent.id}"
    w = Watcher("--redis", redis_server.url, "--imds", agent.imds_url, "--agent-id", agent.id, "--grace", "1")
    try:
        w.wait_for("watching agent")
        w.wait_polls(2)  # a poll or two with nothing there
        assert notices(store, target) == []
        t0 = time.time()
        info = cluster.interrupt(agent.id, notice_seconds=5)
        found = wait_notices(store, target, "terminate", timeout=3.5, describe=w.text)
        latency = time.time() - t0
        assert len(found) == 1, (latency, w.text())
        f = found[0].fields
        # IMDS gives whole seconds: the notice's time, rounded down
        assert int(info["notice_time"]) == float(f["terminate_at"])
        assert (f["action"], f["agent_id"], f["instance_id"], f["source"]) == (
            "terminate", agent.id, agent.instance_id, "imds")
        assert t0 - 1 <= float(f["noticed_at"]) <= time.time()
        # the machine is gone 5 s after the interruption: the watcher leaves grace (1 s) later, by itself
        assert w.proc.wait(timeout=15) == 0, w.text()
        assert len(notices(store, target)) == 1  # never published again; no rebalance after the terminate notice
        assert "stopping" in w.text()
    finally:
        w.stop()


def test_rebalance_recommendation_published_once(cluster, store, redis_server):
    agent = cluster.agents[1]
    target = f"agent:{agent.id}"
    w = Watcher("--redis", redis_server.url, "--imds", agent.imds_url, "--agent-id", agent.id, "--interval", "0.5")
    try:
        w.wait_for("watching agent")
        cluster.interrupt(agent.id, rebalance_only=True)
        (found,) = wait_notices(store, target, "rebalance", timeout=3.0)
        assert float(found.fields["notice_time"]) > 0 and found.fields["instance_id"] == agent.instance_id
        w.wait_polls(w.polls() + 4)  # three more polls (the one under way ends first): nothing new
        assert [n.fields["kind"] for n in notices(store, target)] == ["rebalance"]
        assert w.stop() == 0 and w.proc.poll() == 0
    finally:
        w.stop()


def test_without_agent_id_the_notice_names_the_instance(cluster, store, redis_server):
    agent = cluster.agents[2]
    w = Watcher("--redis", redis_server.url, "--imds", agent.imds_url, "--interval", "0.5")
    try:
        w.wait_for("watching this instance")
        cluster.interrupt(agent.id, rebalance_only=True)
        (found,) = wait_notices(store, f"instance:{agent.instance_id}", "rebalance", timeout=3.0)
        assert "agent_id" not in found.fields
    finally:
        assert w.stop() == 0


def test_imds_down_keeps_retrying_and_sigterm_exits_zero(redis_server):
    w = Watcher("--redis", redis_server.url, "--imds", f"http://127.0.0.1:{free_port()}", "--agent-id", "a-down",
                "--interval", "0.2")
    try:
        w.wait_for("IMDS unreachable")
        w.wait_for("IMDS still unreachable", times=2)  # several failed polls, backing off
        assert w.proc.poll() is None
        assert sum("IMDS unreachable" in line for line in w.lines) == 1  # logged once per outage
        assert "Traceback" not in w.text()
    finally:
        t0 = time.monotonic()
        assert w.stop() == 0
        assert time.monotonic() - t0 < 5


def test_redis_down_at_start_is_not_fatal(cluster):
    agent = cluster.agents[1]
    cluster.interrupt(agent.id, rebalance_only=True)  # something to publish
    w = Watcher("--redis", f"redis://127.0.0.1:{free_port()}/0", "--imds", agent.imds_url, "--agent-id", agent.id,
                "--interval", "0.2")
    try:
        w.wait_for("Redis unreachable")
        w.wait_for("Redis still unreachable")  # a try again, after its back-off
        assert w.proc.poll() is None and sum("Redis unreachable" in line for line in w.lines) == 1
    finally:
        assert w.stop() == 0


@pytest.mark.parametrize(("args", "needles"), [
    (["--redis", "http://localhost:6379"], ["--redis", "not a Redis URL"]),
    (["--redis", "redis://localhost:6379", "--interval", "0"], ["--interval", "> 0"]),
    (["--redis", "redis://localhost:6379", "--interval", "soon"], ["--interval", "not a number"]),
    (["--redis", "redis://localhost:6379", "--imds", "ftp://x"], ["--imds"]),
    (["--redis", "redis://localhost:6379", "--token-ttl", "99999"], ["--token-ttl", "21600"]),
])
def test_bad_options_are_one_line_errors(args, needles):
    res = subprocess.run([sys.executable, "-m", "plastic.watch", *args], capture_output=True, text=True, cwd=REPO,
                         timeout=60, check=False, env={"PATH": "/usr/bin:/bin"})
    assert_one_line_error(res, *needles)
