"""The driver's scenarios that need only ``cluster.master_url`` and the ``drivers`` fixture, so they run
against any master: collected by tests/mesos/test_local_cluster.py against plastic's local master and by
tests/compose/test_a_real_master.py against a real Mesos 1.11 one (where they disagree, the local master
is wrong); and what they use (a Launcher scheduler, tasks, offer attributes)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from plastic.mesos import DriverStatus, MesosSchedulerDriver
from tests.mesos.helpers import Recorder

FAST = {"backoff_initial_s": 0.05, "backoff_max_s": 0.5, "stop_timeout_s": 5}



def attributes(offer: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for a in offer.get("attributes", []):
        out[a["name"]] = a["text"]["value"] if a["type"] == "TEXT" else a["scalar"]["value"]
    return out


def scalar(offer: dict[str, Any], name: str) -> float:
    return sum(r["scalar"]["value"] for r in offer.get("resources", []) if r["name"] == name and r["type"] == "SCALAR")


def task(task_id: str, command: str, *, cpus: float = 0.1, mem: float = 16, shell: bool = True,
         arguments: list[str] | None = None) -> dict[str, Any]:
    cmd: dict[str, Any] = {"value": command, "shell": shell}
    if arguments is not None:
        cmd["arguments"] = arguments
    return {
        "name": task_id,
        "task_id": {"value": task_id},
        "resources": [
            {"name": "cpus", "type": "SCALAR", "scalar": {"value": cpus}},
            {"name": "mem", "type": "SCALAR", "scalar": {"value": mem}},
        ],
        "command": cmd,
    }


class Launcher(Recorder):
    """Launches submitted tasks on the first offer that suits each; declines the rest briefly."""

    def __init__(self) -> None:
        super().__init__()
        self.todo: list[tuple[dict[str, Any], Callable[[dict[str, Any]], bool]]] = []
        self.placed: dict[str, dict[str, Any]] = {}  # task id -> offer it went to
        self.accepts: list[Any] = []
        self.todo_lock = threading.Lock()

    def submit(self, driver: MesosSchedulerDriver, tasks: list[dict[str, Any]],
               where: Callable[[dict[str, Any]], bool] = lambda o: True) -> None:
        with self.todo_lock:
            self.todo += [(t, where) for t in tasks]
        driver.reviveOffers()

    def resourceOffers(self, driver, offers):
        super().resourceOffers(driver, offers)
        for offer in offers:
            cpus, mem, batch = scalar(offer, "cpus"), scalar(offer, "mem"), []
            with self.todo_lock:
                for item in list(self.todo):
                    t, where = item
                    need_c = t["resources"][0]["scalar"]["value"]
                    need_m = t["resources"][1]["scalar"]["value"]
                    if where(offer) and need_c <= cpus + 1e-9 and need_m <= mem:
                        cpus -= need_c
                        mem -= need_m
                        batch.append(t)
                        self.todo.remove(item)
                        self.placed[t["task_id"]["value"]] = offer
            if batch:
                self.accepts.append(driver.launchTasks(offer["id"], batch))
            else:
                driver.declineOffer(offer["id"], filters=1.0)


@pytest.fixture
def drivers() -> Iterator[Callable[..., MesosSchedulerDriver]]:
    made: list[MesosSchedulerDriver] = []

    def make(sched: Any, master: str, name: str = "driver-it", **kw: Any) -> MesosSchedulerDriver:
        opts = dict(FAST)
        opts.update(kw)
        info = opts.pop("framework_info", {"user": "root", "name": name})
        d = MesosSchedulerDriver(sched, info, master, **opts)
        made.append(d)
        d.start()
        return d

    yield make
    for d in made:
        if d.status is DriverStatus.DRIVER_RUNNING:
            d.stop()  # TEARDOWN: the master kills what is left


def on_core(offer: dict[str, Any]) -> bool:
    return attributes(offer).get("cluster") == "core"


def on_spot(offer: dict[str, Any]) -> bool:
    return attributes(offer).get("preemptible") == "true"


def test_launch_finish_and_fail_with_exit_codes(cluster, drivers):
    sched = Launcher()
    driver = drivers(sched, cluster.master_url, name="it-launch")
    sched.wait_count("registered")
    sched.submit(driver, [
        task("ok-1", "true"),
        task("fail-3", "echo boom >&2; exit 3"),
        task("args-1", "/bin/sh", shell=False, arguments=["sh", "-c", "exit 0"]),
    ], where=on_spot)
    finished = sched.wait_state("ok-1", "TASK_FINISHED")
    failed = sched.wait_state("fail-3", "TASK_FAILED")
    sched.wait_state("args-1", "TASK_FINISHED")
    assert "status 0" in finished.get("message", "")
    assert "status 3" in failed.get("message", "")
    assert "TASK_RUNNING" in sched.states("ok-1")
    assert sched.states("ok-1").index("TASK_RUNNING") < sched.states("ok-1").index("TASK_FINISHED")
    assert all(attributes(sched.placed[t]).get("preemptible") == "true" for t in ("ok-1", "fail-3"))
    assert all(f.result(5) == 202 for f in sched.accepts)
    assert driver.flush(5)


def test_kill_goes_through_killing(cluster, drivers):
    sched = Launcher()
    driver = drivers(sched, cluster.master_url, name="it-kill")
    sched.wait_count("registered")
    sched.submit(driver, [task("sleeper", "sleep 60")], where=on_core)
    running = sched.wait_state("sleeper", "TASK_RUNNING")
    assert driver.killTask("sleeper", running["agent_id"]).result(5) == 202
    sched.wait_state("sleeper", "TASK_KILLED", timeout=15)
    states = sched.states("sleeper")
    assert states.index("TASK_KILLING") < states.index("TASK_KILLED")


def test_reconcile_explicit_and_implicit(cluster, drivers):
    sched = Launcher()
    driver = drivers(sched, cluster.master_url, name="it-reconcile")
    sched.wait_count("registered")
    sched.submit(driver, [task("rec-run", "sleep 60"), task("rec-done", "true")], where=on_core)
    running = sched.wait_state("rec-run", "TASK_RUNNING")
    sched.wait_state("rec-done", "TASK_FINISHED")

    def reconciled(task_id: str) -> list[dict[str, Any]]:
        return [s for s in sched.statuses(task_id) if s.get("reason") == "REASON_RECONCILIATION"]

    # A finished task stays active at the master until its TASK_FINISHED is acknowledged.
    assert driver.flush(5)
    driver.reconcileTasks([]).result(5)
    sched.wait_for(lambda: bool(reconciled("rec-run")), 10, "implicit reconciliation")
    answer = reconciled("rec-run")[0]
    assert answer["state"] == "TASK_RUNNING" and "uuid" not in answer  # nothing to acknowledge
    assert not reconciled("rec-done")  # implicit reconciliation covers active tasks only
    driver.reconcileTasks([running, {"task_id": {"value": "never-was"}, "agent_id": running["agent_id"]}]).result(5)
    sched.wait_for(lambda: len(reconciled("rec-run")) >= 2 and bool(reconciled("never-was")), 10, "explicit reconciliation")
    assert reconciled("never-was")[0]["state"] in ("TASK_GONE", "TASK_UNKNOWN", "TASK_LOST")
    driver.killTask("rec-run")


def test_failover_to_a_new_driver_keeps_tasks(cluster, drivers):
    first = Launcher()
    a = drivers(first, cluster.master_url, name="it-failover", failover_timeout_s=60)
    first.wait_count("registered")
    first.submit(a, [task("survivor", "sleep 60")], where=on_core)
    first.wait_state("survivor", "TASK_RUNNING")
    framework_id = a.framework_id
    assert a.stop(failover=True) is DriverStatus.DRIVER_STOPPED

    second = Recorder()
    b = drivers(second, cluster.master_url, failover_timeout_s=60,
                framework_info={"user": "root", "name": "it-failover", "id": {"value": framework_id}})
    second.wait_count("registered")
    assert second.of("registered")[0][0] == {"value": framework_id}
    b.reconcileTasks([]).result(5)
    answer = second.wait_state("survivor", "TASK_RUNNING")
    assert answer.get("reason") == "REASON_RECONCILIATION"
    b.killTask("survivor").result(5)
    second.wait_state("survivor", "TASK_KILLED", timeout=15)
