"""The compose cluster for real (`make test-compose`, needs Docker; not part of `make test`).

One cluster per session: the images are built (the layer cache makes a rebuild quick; the first
Mesos build compiles for 35-60 minutes, and its image is kept by what it is built from:
tests/compose/images.py), `up -d`, then every service is polled until healthy
(Debian's docker-compose 1.29 has no `--wait`).  At the end `down -v`, and nothing of the project
may be left: no container, network or volume.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from tests.clirun import REPO
from tests.compose.helpers import MASTER, RUNS
from tests.compose.images import MESOS_IMAGE, services_to_build

PROJECT = "plastictest"
UP_TIMEOUT_S = 600


def compose_cmd() -> list[str]:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.fail("neither `docker compose` nor `docker-compose` is installed (README: the compose cluster)")


class Compose:
    master_url = MASTER  # the driver's scenario tests (tests/compose/test_a_real_master.py) need only this

    def __init__(self) -> None:
        self.cmd = [*compose_cmd(), "-p", PROJECT, "-f", str(REPO / "docker-compose.yml")]

    def run(self, *args: str, check: bool = True, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
        res = subprocess.run([*self.cmd, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, **kw)
        if check and res.returncode != 0:
            raise AssertionError(f"{' '.join(args)}: exit {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
        return res

    def plastic(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        return self.run("exec", "-T", "manager", "plastic", *args, check=check, timeout=timeout)

    def container(self, service: str) -> str:
        return self.run("ps", "-q", service).stdout.strip()

    def health(self) -> dict[str, str]:
        out = {}
        for line in self.run("ps", "-q").stdout.split():
            doc = json.loads(subprocess.run(["docker", "inspect", line], capture_output=True, text=True,
                                            check=True).stdout)[0]
            name = doc["Config"]["Labels"].get("com.docker.compose.service", doc["Name"])
            state = doc["State"]
            out[name] = state.get("Health", {}).get("Status") or state["Status"]
        return out

    def wait_healthy(self, services: set[str], timeout: float = UP_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while True:
            health = self.health()
            if all(health.get(s) in ("healthy", "running") for s in services) and all(
                    health.get(s) == "healthy" for s in services if s in HEALTHCHECKED):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"not healthy after {timeout:.0f} s: {health}\n"
                                     + self.run("logs", "--tail", "30", check=False).stdout[-6000:])
            time.sleep(2)

    def leftovers(self) -> dict[str, list[str]]:
        label = f"label=com.docker.compose.project={PROJECT}"
        return {kind: subprocess.run(["docker", kind, "ls", "-q", "--filter", label] if kind != "container" else
                                     ["docker", "ps", "-aq", "--filter", label], capture_output=True, text=True,
                                     check=True).stdout.split()
                for kind in ("container", "network", "volume")}


HEALTHCHECKED: set[str] = set()


def services_of_file() -> dict:
    import yaml

    return yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]


@pytest.fixture(scope="session")
def cluster():
    if os.environ.get("PLASTIC_COMPOSE_TESTS") != "1":
        pytest.skip("the compose tests run with `make test-compose` (PLASTIC_COMPOSE_TESTS=1)")
    c = Compose()
    services = services_of_file()
    HEALTHCHECKED.update(n for n, s in services.items() if "healthcheck" in s)
    c.run("down", "-v", "--remove-orphans", check=False)
    RUNS.mkdir(exist_ok=True)
    t0 = time.monotonic()
    only, tag = services_to_build(services, REPO)  # the Mesos image of these inputs, if it is here already
    c.run("build", *only, timeout=7200)
    subprocess.run(["docker", "tag", MESOS_IMAGE, tag], check=True, capture_output=True, timeout=60)
    built = time.monotonic()
    c.run("up", "-d", timeout=900)
    c.wait_healthy(set(services))
    c.times = {"build_s": built - t0, "up_to_healthy_s": time.monotonic() - built}
    print(f"compose: build {c.times['build_s']:.0f} s, up to healthy {c.times['up_to_healthy_s']:.0f} s")
    try:
        yield c
    finally:
        logs = c.run("logs", "--no-color", check=False)
        (RUNS / "compose.log").write_text(logs.stdout + logs.stderr)
        c.run("down", "-v", "--remove-orphans", check=False)
