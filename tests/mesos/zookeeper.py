"""A real standalone ZooKeeper for the tests, when this machine has one (Debian's `zookeeper` package)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.redis_servers import free_port

JARS = Path(os.environ.get("PLASTIC_ZOOKEEPER_JARS", "/usr/share/java"))


def available() -> bool:
    return shutil.which("java") is not None and (JARS / "zookeeper.jar").exists()


@contextmanager
def zookeeper_server(tmp_path: Path) -> Iterator[str]:
    """Start ZooKeeperServerMain on a free loopback port; yields "127.0.0.1:PORT"."""
    if not available():
        pytest.skip("no ZooKeeper here (apt-get install zookeeper to run this test)")
    port = free_port()
    data = tmp_path / "zk-data"
    data.mkdir()
    classpath = f"{JARS / 'zookeeper.jar'}:{JARS / 'zookeeper-jute.jar'}:{JARS}/*"
    proc = subprocess.Popen(
        [
            "java", "-Xmx128m", "-cp", classpath,
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.4lw.commands.whitelist=ruok",
            "org.apache.zookeeper.server.ZooKeeperServerMain", str(port), str(data),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"ruok")
                    if s.recv(4) == b"imok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.skip("ZooKeeper did not start")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
