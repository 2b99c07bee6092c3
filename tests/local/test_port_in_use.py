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


def test_a_master_restarted_on_its_port_waits_for_the_port_to_be_free(tmp_path):
    """restart_master starts the new master on the old one's port, which another process may still hold
    for a moment: start_master tries again while the child says the port is in use (its last line),
    and serves once the port is free."""
    import threading

    from plastic.core.errors import PortInUseError
    from plastic.local.handle import LocalCluster
    from plastic.local.master_process import start_master, stop_child
    from tests.waiting import eventually

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    cluster = LocalCluster(CLUSTER, workdir=tmp_path / "wd", start_timeout=60.0)
    log = tmp_path / "wd" / "cluster.log"

    def free_the_port_once_refused() -> None:
        eventually(lambda: log.is_file() and PortInUseError.PHRASE in log.read_text(), 60,
                   "the child saying the port is in use")
        sock.close()

    with socket.create_server(("127.0.0.1", 0)) as probe:  # a port of our own to hold, then let go
        port = probe.getsockname()[1]
    sock.bind(("127.0.0.1", port))
    sock.listen(1)
    freer = threading.Thread(target=free_the_port_once_refused, daemon=True)
    freer.start()
    proc, doc = start_master(cluster, port=port, remove_workdir=False)
    try:
        freer.join(10)
        assert doc["port"] == port and PortInUseError.PHRASE in log.read_text()
    finally:
        stop_child(proc, doc.get("cluster_id"))
