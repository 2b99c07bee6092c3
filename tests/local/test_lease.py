"""The local cluster with a lease instead of a parent: it outlives its owner while the lease is
renewed, can be taken over with LocalCluster.attach, and stops by itself when the lease lapses."""

from __future__ import annotations

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
        eventually(lambda: not cluster.running, 15, "the cluster to stop by itself, its lease lapsed", interval=0.2)
    finally:
        cluster.stop()
