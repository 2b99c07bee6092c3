"""`plastic local up` on a port another process holds: one line naming the port, no traceback."""

from __future__ import annotations

import socket

import pytest

from tests.clirun import REPO, assert_one_line_error, plastic

CLUSTER = REPO / "deploy" / "cluster-example.yaml"


@pytest.fixture
def held_port():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def test_up_in_the_foreground_names_the_port(held_port):
    res = plastic("local", "up", "--cluster", CLUSTER, "--port", held_port)
    assert_one_line_error(res, f"port {held_port} on 127.0.0.1 is in use", "--port")


def test_up_detached_names_the_port_and_the_log(held_port, tmp_path):
    res = plastic("local", "up", "--cluster", CLUSTER, "--port", held_port, "--detach", "--workdir", tmp_path)
    assert res.returncode == 1, res
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"port {held_port} on 127.0.0.1 is in use" in lines[0] and "cluster.log" in lines[0]
