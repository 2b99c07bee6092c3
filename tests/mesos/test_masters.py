"""Master address parsing, ZooKeeper master-info parsing, redirects, backoff bounds."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plastic.mesos.connection import Backoff
from plastic.mesos.driver_errors import MasterResolutionError
from plastic.mesos.masters import (
    MasterEndpoint,
    leader_node,
    parse_master,
    parse_master_info,
    redirect_base,
)

from . import transcripts

# What a Mesos 1.11 master writes to its ZooKeeper node json.info_<seq> (a
# JSON MasterInfo; the same message as SUBSCRIBED's master_info).
MASTER_INFO_NODE = json.dumps({
    "address": {"hostname": "mesos-master-2.internal", "ip": "10.0.3.7", "port": 5050},
    "hostname": "mesos-master-2.internal",
    "id": "066d9997-c53c-4de7-9401-d3a7385d2fa4",
    "ip": 117637130,
    "pid": "master@10.0.3.7:5050",
    "port": 5050,
    "version": "1.11.1",
    "capabilities": [{"type": "AGENT_UPDATE"}, {"type": "AGENT_DRAINING"}, {}],
    "domain": {},
}).encode()


def test_parse_master_forms():
    assert parse_master("http://m:5050").url == "http://m:5050"
    assert parse_master("https://m").url == "https://m"
    assert parse_master("http://m").url == "http://m"  # a full URL keeps HTTP's default port
    assert parse_master("http://m:5050/api/v1/scheduler").url == "http://m:5050"
    assert parse_master("http://proxy/mesos/").url == "http://proxy/mesos"
    assert parse_master("127.0.0.1:5051").url == "http://127.0.0.1:5051"
    assert parse_master("m").url == "http://m:5050"
    zk = parse_master("zk://u:p@zk1:2181,zk2:2181/mesos")
    assert (zk.kind, zk.zk_hosts, zk.zk_path, zk.zk_auth) == ("zk", "zk1:2181,zk2:2181", "/mesos", "u:p")
    assert parse_master("zk://zk1:2181/mesos/").zk_path == "/mesos"
    for bad in ("", "zk://zk1:2181", "ftp://m", "m:port"):
        with pytest.raises(MasterResolutionError):
            parse_master(bad)


def test_leader_is_the_lowest_json_info_sequence():
    children = ["log_replicas", "json.info_0000000012", "info_0000000003", "json.info_0000000009", "json.info_0000000010"]
    assert leader_node(children) == "json.info_0000000009"
    assert leader_node(["log_replicas", "info_0000000001"]) is None
    assert leader_node([]) is None


def test_parse_master_info_node():
    assert parse_master_info(MASTER_INFO_NODE) == ("mesos-master-2.internal", 5050)
    info = json.loads(MASTER_INFO_NODE)
    del info["address"]["hostname"]
    assert parse_master_info(info) == ("10.0.3.7", 5050)
    # Old masters without `address`: hostname, or the packed ip (network order read little-endian).
    assert parse_master_info({"ip": 16777343, "port": 5051}) == ("127.0.0.1", 5051)
    assert parse_master_info({"hostname": "h", "port": 1}) == ("h", 1)
    recorded = next(e for e in transcripts.events("08_SUBSCRIBE_stream.events.jsonl") if e["type"] == "SUBSCRIBED")
    assert parse_master_info(recorded["subscribed"]["master_info"]) == ("127.0.0.1", 5050)
    for bad in (b"\x08\x01binary protobuf", b"[]", b'{"id": "x"}'):
        with pytest.raises(MasterResolutionError):
            parse_master_info(bad)


def test_redirect_locations():
    # Mesos answers 307 with a scheme-relative Location.
    assert redirect_base("//127.0.0.1:5051/api/v1/scheduler", "http://127.0.0.1:5050") == "http://127.0.0.1:5051"
    assert redirect_base("//m2:5050/api/v1", "https://m1:5050") == "https://m2:5050"
    assert redirect_base("http://m3:5050/master/api/v1/scheduler", "http://m1:5050") == "http://m3:5050/master"
    endpoint = MasterEndpoint("127.0.0.1:5050")
    endpoint.redirect("//127.0.0.1:6000/api/v1/scheduler")
    assert endpoint.url("/api/v1/scheduler") == "http://127.0.0.1:6000/api/v1/scheduler"
    endpoint.reset()
    assert endpoint.base_url() == "http://127.0.0.1:5050"


@given(
    initial=st.floats(min_value=0.001, max_value=5),
    factor=st.floats(min_value=1, max_value=100),
    multiplier=st.floats(min_value=1, max_value=4),
    seed=st.integers(0, 2**32),
)
def test_backoff_full_jitter_bounds(initial, factor, multiplier, seed):
    backoff = Backoff(initial, initial * factor, multiplier, rng=random.Random(seed))
    for n in range(40):
        ceiling = min(initial * factor, initial * multiplier**n)
        delay = backoff.next_delay()
        assert 0.0 <= delay <= ceiling + 1e-12
    assert backoff.ceiling() == pytest.approx(min(initial * factor, initial * multiplier**40))
    for _ in range(300):  # never overflows, never exceeds the cap
        assert backoff.next_delay() <= initial * factor
    backoff.reset()
    assert backoff.attempt == 0 and backoff.ceiling() == pytest.approx(initial)


def test_backoff_spreads_and_rejects_bad_settings():
    backoff = Backoff(1.0, 8.0, rng=random.Random(1))
    backoff.attempt = 10
    delays = [backoff.next_delay() for _ in range(200)]
    assert max(delays) <= 8.0 and min(delays) < 1.0 and max(delays) > 6.0  # full jitter: the whole range
    for args in ((0, 1), (2, 1), (1, 2, 0.5)):
        with pytest.raises(ValueError):
            Backoff(*args)
