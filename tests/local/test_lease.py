"""The local cluster with a lease instead of a parent: it outlives its owner while the lease is
renewed, can be taken over with LocalCluster.attach, and stops by itself when the lease lapses and
its holder (the process that renewed it last) is gone, but not while that holder still runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from plastic.local import supervisor as sup
from plastic.local.handle import LocalCluster
from plastic.procs import pid_alive
from tests.waiting import eventually

SPEC = {"clusters": [{"name": "core", "count": 1, "cpus": 1, "ram_mib": 512, "preemptible": False}]}


def test_lease_expired(tmp_path):
    lease = tmp_path / "lease"
    assert sup.lease_expired(lease, 5.0)
    sup.touch_lease(lease)
    assert not sup.lease_expired(lease, 5.0)
    assert sup.lease_expired(lease, 5.0, now=time.time() + 6.0)


def _hand_lease_to_a_process_that_exits(lease) -> int:
    """The lease renewed last by another process, gone since (an owner that was killed): its pid."""
    code = "import sys; from pathlib import Path; from plastic.local.supervisor import touch_lease; " \
           "touch_lease(Path(sys.argv[1]))"
    subprocess.run([sys.executable, "-c", code, str(lease)], check=True, timeout=60)
    return json.loads(lease.read_text())["pid"]


def test_the_lease_names_its_holder(tmp_path):
    lease = tmp_path / "run" / "lease"
    sup.touch_lease(lease)
    assert sup.lease_holder(lease) == os.getpid()
    dead = _hand_lease_to_a_process_that_exits(lease)
    assert dead != os.getpid() and sup.lease_holder(lease) is None
    sup.touch_lease(lease)  # taken over (plastic run --resume)
    assert sup.lease_holder(lease) == os.getpid()


def test_an_expired_lease_is_abandoned_only_once_its_holder_is_gone(tmp_path):
    """The blast elastic replay on two cores: 240 task processes left `plastic run`'s poll loop runnable
    but unscheduled for more than the 60 s lease (0.11 CPU-s in 91 s); the cluster took the starved
    owner for a dead one and stopped under the run."""
    lease = tmp_path / "lease"
    later = time.time() + 6.0
    assert sup.lease_abandoned(lease, 5.0)  # no lease at all (removed by LocalCluster.stop)
    sup.touch_lease(lease)
    assert not sup.lease_abandoned(lease, 5.0)
    assert sup.lease_expired(lease, 5.0, now=later)
    assert not sup.lease_abandoned(lease, 5.0, now=later), "its holder (this process) still runs"
    _hand_lease_to_a_process_that_exits(lease)
    assert not sup.lease_abandoned(lease, 5.0), "renewed just now"
    assert sup.lease_abandoned(lease, 5.0, now=time.time() + 6.0)
    # a holder's pid that another process has now (its start time differs)
    lease.write_text(json.dumps({"pid": os.getpid(), "started": -1}))
    assert sup.lease_abandoned(lease, 5.0, now=time.time() + 6.0)
    lease.write_text("")  # a lease that names no holder
    assert sup.lease_abandoned(lease, 5.0, now=time.time() + 6.0)


def test_attach_and_stop(tmp_path):
    lease = tmp_path / "lease"
    owner = LocalCluster(SPEC, workdir=tmp_path / "wd", lease_file=lease, lease_s=30.0).start()
    try:
        attached = LocalCluster.attach(tmp_path / "wd", lease_file=lease, lease_s=30.0)
        assert attached.master_url == owner.master_url and attached.pid == owner.pid
        assert [a.id for a in attached.agents] == [a.id for a in owner.agents]
        assert attached.running
        owner._proc = None  # the first owner is gone (as if killed); the attached one stops it
        attached.stop()
        assert not pid_alive(attached.pid)
        with pytest.raises(RuntimeError):
            LocalCluster.attach(tmp_path / "wd")
    finally:
        if owner.pid and pid_alive(owner.pid):
            sup.terminate(owner.pid, owner.cluster_id, timeout=5.0)


@pytest.mark.slow
def test_lapsed_lease_stops_the_cluster(tmp_path):
    lease = tmp_path / "lease"
    cluster = LocalCluster(SPEC, workdir=tmp_path / "wd", lease_file=lease, lease_s=3.0).start()
    try:
        assert httpx.get(cluster.master_url + "/version", timeout=5).status_code == 200
        for _ in range(12):  # renewed: still there after more than the lease
            time.sleep(0.3)
            cluster.touch_lease()
        assert cluster.running
        _hand_lease_to_a_process_that_exits(lease)  # the owner is killed
        eventually(lambda: not cluster.running, 15, "the cluster to stop by itself, its lease lapsed", interval=0.2)
    finally:
        cluster.stop()


def test_a_lapsed_lease_whose_holder_still_runs_does_not_stop_the_cluster(tmp_path):
    """The owner is alive but does not renew in time (starved of CPU): the cluster serves on, says so
    in its log, and takes the renewals again; the holder's death stops it."""
    lease = tmp_path / "lease"
    cluster = LocalCluster(SPEC, workdir=tmp_path / "wd", lease_file=lease, lease_s=0.5).start()
    try:
        said = eventually(lambda: [line for line in cluster.log_tail().splitlines()
                                   if "not renewed" in line and str(lease) in line],
                          30, "the master to find the lease lapsed", alive=[cluster._proc], interval=0.1)
        assert "still runs: serving on" in said[0], said
        assert cluster.running and httpx.get(cluster.master_url + "/version", timeout=5).status_code == 200
        cluster.touch_lease()
        _hand_lease_to_a_process_that_exits(lease)
        eventually(lambda: not cluster.running, 15, "the cluster to stop, its lease's holder gone", interval=0.1)
        assert "its holder is gone: stopping" in cluster.log_tail()
    finally:
        cluster.stop()
