"""zk:// master resolution against a real ZooKeeper server through kazoo (skipped without one)."""

from __future__ import annotations

import json

import pytest

from plastic.mesos.driver_errors import MasterResolutionError
from plastic.mesos.masters import MasterEndpoint, parse_master, resolve_zk

from .zookeeper import zookeeper_server


def _info(host: str, port: int) -> bytes:
    return json.dumps({
        "address": {"hostname": host, "ip": host, "port": port},
        "hostname": host, "id": f"id-{port}", "ip": 16777343, "pid": f"master@{host}:{port}", "port": port,
        "version": "1.11.1",
    }).encode()


@pytest.fixture(scope="module")
def zk(tmp_path_factory):
    with zookeeper_server(tmp_path_factory.mktemp("zk")) as hosts:
        yield hosts


def test_leader_is_read_from_zookeeper(zk):
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zk)
    client.start(timeout=10)
    try:
        client.ensure_path("/mesos-a")
        client.create("/mesos-a/log_replicas", b"")
        first = client.create("/mesos-a/json.info_", _info("127.0.0.1", 5101), sequence=True, ephemeral=True)
        client.create("/mesos-a/json.info_", _info("127.0.0.2", 5102), sequence=True, ephemeral=True)
        url = f"zk://{zk}/mesos-a"
        assert resolve_zk(parse_master(url), timeout_s=10) == "http://127.0.0.1:5101"
        endpoint = MasterEndpoint(url)
        assert endpoint.url("/api/v1/scheduler") == "http://127.0.0.1:5101/api/v1/scheduler"
        # The leader goes: the next lowest sequence leads; a reset endpoint asks again.
        client.delete(first)
        assert endpoint.base_url() == "http://127.0.0.1:5101"  # cached until reset
        endpoint.reset()
        assert endpoint.base_url() == "http://127.0.0.2:5102"
    finally:
        client.stop()
        client.close()


def test_no_leader_registered(zk):
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zk)
    client.start(timeout=10)
    client.ensure_path("/mesos-empty")
    client.stop()
    client.close()
    with pytest.raises(MasterResolutionError, match="no leading master"):
        resolve_zk(parse_master(f"zk://{zk}/mesos-empty"), timeout_s=10)
    with pytest.raises(MasterResolutionError):
        resolve_zk(parse_master(f"zk://{zk}/no-such-path"), timeout_s=10)


def test_unreachable_zookeeper():
    with pytest.raises(MasterResolutionError, match="ZooKeeper"):
        resolve_zk(parse_master("zk://127.0.0.1:1/mesos"), timeout_s=1)
