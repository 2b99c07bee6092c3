"""The driver against the real local Mesos-API cluster (plastic.local): no mocks.

Each scenario subscribes a real framework, launches real processes on the
local agents and waits (bounded) for the master's updates.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from plastic.mesos import DriverStatus

from .driver_scenarios import (  # collected here too: they run against any master
    Launcher,
    attributes,
    drivers,  # noqa: F401 (collected, or a fixture, here)
    on_core,
    on_spot,
    scalar,
    task,
    test_failover_to_a_new_driver_keeps_tasks,  # noqa: F401 (collected, or a fixture, here)
    test_kill_goes_through_killing,  # noqa: F401 (collected, or a fixture, here)
    test_launch_finish_and_fail_with_exit_codes,  # noqa: F401 (collected, or a fixture, here)
    test_reconcile_explicit_and_implicit,  # noqa: F401 (collected, or a fixture, here)
)
from .helpers import Recorder
from .zookeeper import available as zookeeper_available
from .zookeeper import zookeeper_server

LocalCluster = pytest.importorskip("plastic.local.handle").LocalCluster

SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 4, "ram_mib": 8192, "preemptible": False},
    {"name": "burst-small", "count": 2, "cpus": 1, "ram_mib": 2048, "preemptible": True},
]}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0, kill_grace_s=2.0) as c:
        yield c


@pytest.fixture
def fresh_cluster() -> Iterator[Any]:
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0, kill_grace_s=2.0, heartbeat_s=0.5) as c:
        yield c


# ----------------------------------------------------------------------------------


def test_subscribe_and_offers_with_attributes(cluster, drivers):  # noqa: F811 (the drivers fixture)
    sched = Recorder()
    driver = drivers(sched, cluster.master_url, name="it-offers")
    sched.wait_count("registered")
    framework_id, master_info = sched.of("registered")[0]
    assert framework_id["value"] == driver.framework_id
    assert master_info.get("version")
    sched.wait_for(lambda: len({o["agent_id"]["value"] for a in sched.of("resourceOffers") for o in a[0]}) == 3,
                   10, "offers from the three agents")
    offers = {o["agent_id"]["value"]: o for a in sched.of("resourceOffers") for o in a[0]}
    by_cluster = {attributes(o)["cluster"]: attributes(o)["preemptible"] for o in offers.values()}
    assert by_cluster == {"core": "false", "burst-small": "true"}
    core = next(o for o in offers.values() if on_core(o))
    assert scalar(core, "cpus") == pytest.approx(4.0) and scalar(core, "mem") == pytest.approx(8192)
    frameworks = driver.operator.get_frameworks()["get_frameworks"]["frameworks"]
    mine = [f for f in frameworks if f["framework_info"]["id"]["value"] == driver.framework_id]
    assert mine and {c["type"] for c in mine[0]["framework_info"]["capabilities"]} >= {"PARTITION_AWARE", "TASK_KILLING_STATE"}
    assert "failover_timeout" not in mine[0]["framework_info"] or mine[0]["framework_info"]["failover_timeout"] == 0


def test_agent_loss_reports_unreachable_and_slave_lost(fresh_cluster, drivers):  # noqa: F811 (the drivers fixture)
    sched = Launcher()
    driver = drivers(sched, fresh_cluster.master_url, name="it-agent-loss")
    sched.wait_count("registered")
    sched.submit(driver, [task("doomed", "sleep 60")], where=on_spot)
    running = sched.wait_state("doomed", "TASK_RUNNING")
    agent_id = running["agent_id"]["value"]
    fresh_cluster.kill_agent(agent_id)
    lost = sched.wait_state("doomed", "TASK_UNREACHABLE", timeout=15)  # PARTITION_AWARE: not TASK_LOST
    assert lost.get("reason") == "REASON_AGENT_REMOVED"
    sched.wait_for(lambda: {"value": agent_id} in [a[0] for a in sched.of("slaveLost")], 10, "slaveLost")
    assert driver.status is DriverStatus.DRIVER_RUNNING


def test_drain_agent_kills_with_reason_draining(fresh_cluster, drivers):  # noqa: F811 (the drivers fixture)
    sched = Launcher()
    driver = drivers(sched, fresh_cluster.master_url, name="it-drain")
    sched.wait_count("registered")
    sched.submit(driver, [task("drained", "sleep 60")], where=on_spot)
    running = sched.wait_state("drained", "TASK_RUNNING")
    agent_id = running["agent_id"]
    driver.drainAgent(agent_id, max_grace_period_s=5)
    killed = sched.wait_state("drained", "TASK_KILLED", timeout=15)
    assert killed.get("reason") == "REASON_AGENT_DRAINING"
    agents = driver.operator.get_agents()["get_agents"]["agents"]
    (me,) = [a for a in agents if a["agent_info"]["id"] == agent_id]
    assert me.get("deactivated") is True
    # Reactivated, it offers again.
    before = len(sched.of("resourceOffers"))
    driver.reactivateAgent(agent_id)
    driver.reviveOffers()
    sched.wait_for(lambda: any(o["agent_id"] == agent_id for a in sched.of("resourceOffers")[before:] for o in a[0]),
                   10, "offers from the reactivated agent")


def test_reconnect_after_the_master_pauses_replays_queued_calls(fresh_cluster, drivers):  # noqa: F811 (the drivers fixture)
    """SIGSTOP the master's process: heartbeats stop, the watchdog drops the stream,
    calls made meanwhile are queued; after SIGCONT the driver fails over to the same
    framework id and the queued KILL is carried out."""
    sched = Launcher()
    driver = drivers(sched, fresh_cluster.master_url, name="it-pause", failover_timeout_s=60,
                     heartbeat_grace=3, subscribe_timeout_s=1.0)
    sched.wait_count("registered")
    assert driver.heartbeat_interval_s == pytest.approx(0.5)
    sched.submit(driver, [task("paused", "sleep 60")], where=on_core)
    running = sched.wait_state("paused", "TASK_RUNNING")
    framework_id = driver.framework_id
    drops = sched.names().count("disconnected")
    os.kill(fresh_cluster.pid, signal.SIGSTOP)
    try:
        sched.wait_count("disconnected", drops + 1, timeout=10)
        assert not driver.connected
        kill = driver.killTask("paused", running["agent_id"])
        assert not kill.done()  # queued until the connection is back
    finally:
        os.kill(fresh_cluster.pid, signal.SIGCONT)
    sched.wait_count("reregistered", drops + 1, timeout=20)
    assert driver.framework_id == framework_id
    assert kill.result(10) == 202
    sched.wait_state("paused", "TASK_KILLED", timeout=15)
    assert driver.reconnects >= 1


def test_reconnect_after_the_master_restarts(fresh_cluster, drivers):  # noqa: F811 (the drivers fixture)
    """A real master failover: the master process is SIGKILLed and a new one starts on the same port,
    with fresh agents (the old task is gone).  The driver retries until the new master answers,
    re-subscribes with the same framework id (``reregistered``), replays the calls made meanwhile, and
    gets offers from the new agents; reconciling the old task answers TASK_UNKNOWN; a new task runs."""
    sched = Launcher()
    driver = drivers(sched, fresh_cluster.master_url, name="it-restart", failover_timeout_s=60,
                     subscribe_timeout_s=2.0)
    sched.wait_count("registered")
    sched.submit(driver, [task("before-restart", "sleep 30")], where=on_core)
    running = sched.wait_state("before-restart", "TASK_RUNNING")
    framework_id = driver.framework_id
    old_agents = {a.id for a in fresh_cluster.agents}
    restart = threading.Thread(target=fresh_cluster.restart_master, kwargs={"downtime_s": 1.0})
    started = time.monotonic()
    restart.start()
    try:
        sched.wait_count("disconnected", timeout=10)
        # Made while no master is up: queued, replayed after the re-registration.
        queued = [driver.killTask("before-restart", running["agent_id"]),
                  driver.acknowledgeStatusUpdate(running),
                  driver.reconcileTasks([running])]
        assert not any(f.done() for f in queued)
    finally:
        restart.join(30)
    assert not restart.is_alive() and fresh_cluster.master_restarts == 1
    sched.wait_count("reregistered", timeout=15)
    assert time.monotonic() - started < 20
    assert driver.framework_id == framework_id and len(sched.of("registered")) == 1
    assert [f.result(10) for f in queued] == [202, 202, 202]
    new_agents = {a.id for a in fresh_cluster.agents}
    assert not new_agents & old_agents
    sched.wait_for(lambda: any(o["agent_id"]["value"] in new_agents
                               for a in sched.of("resourceOffers") for o in a[0]), 10, "offers from the new agents")

    def unknown() -> list[dict[str, Any]]:
        return [s for s in sched.statuses("before-restart")
                if s["state"] == "TASK_UNKNOWN" and s.get("reason") == "REASON_RECONCILIATION"]

    # The replayed KILL and RECONCILE were answered as for an unknown task; so is a new explicit reconcile.
    sched.wait_for(lambda: len(unknown()) >= 2, 10, "answers to the replayed KILL and RECONCILE")
    assert driver.reconcileTasks([running]).result(5) == 202
    sched.wait_for(lambda: len(unknown()) >= 3, 10, "explicit reconciliation of the old task")
    assert all("uuid" not in s and s["agent_id"] == running["agent_id"] for s in unknown())
    sched.submit(driver, [task("after-restart", "true")], where=on_core)
    finished = sched.wait_state("after-restart", "TASK_FINISHED", timeout=15)
    assert finished["agent_id"]["value"] in new_agents
    assert driver.status is DriverStatus.DRIVER_RUNNING and driver.reconnects >= 1


@pytest.mark.skipif(not zookeeper_available(), reason="no ZooKeeper here (apt-get install zookeeper)")
def test_zk_master_url_end_to_end(cluster, drivers, tmp_path):  # noqa: F811 (the drivers fixture)
    from kazoo.client import KazooClient

    port = int(cluster.master_url.rsplit(":", 1)[1])
    info = {"address": {"hostname": "127.0.0.1", "ip": "127.0.0.1", "port": port}, "hostname": "127.0.0.1",
            "id": "local", "ip": 16777343, "pid": f"master@127.0.0.1:{port}", "port": port}
    with zookeeper_server(tmp_path) as hosts:
        zk = KazooClient(hosts=hosts)
        zk.start(timeout=10)
        try:
            zk.create("/mesos/json.info_", json.dumps(info).encode(), sequence=True, ephemeral=True, makepath=True)
            sched = Recorder()
            driver = drivers(sched, f"zk://{hosts}/mesos", name="it-zk")
            sched.wait_count("registered", timeout=15)
            assert driver.master_url == cluster.master_url
        finally:
            zk.stop()
            zk.close()
