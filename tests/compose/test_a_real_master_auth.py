"""Framework authentication against a real Apache Mesos 1.11 master (`make test-compose`): a second
master from the compose cluster's Mesos image, started with --authenticate_http_frameworks
--http_framework_authenticators=basic --credentials, on its own port beside the compose cluster.
The local master's authentication tests run against it unchanged (where they disagree, the local
master is wrong), and so does `plastic run --mesos-credential`'s refusal."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest

from tests.clirun import REPO, assert_one_line_error, plastic
from tests.local.auth_scenarios import (  # noqa: F401  (collected here, against the real master)
    test_answers_as_a_real_master,
    test_framework_with_the_credential_subscribes_as_its_principal,
    test_framework_without_a_good_credential_is_refused_at_once,
)
from tests.redis_servers import free_port

IMAGE = "plastic/mesos:1.11"
NAME = "plastictest-auth-master"


@pytest.fixture(scope="module")
def auth_cluster(tmp_path_factory) -> Iterator[SimpleNamespace]:
    if os.environ.get("PLASTIC_COMPOSE_TESTS") != "1":
        pytest.skip("the compose tests run with `make test-compose` (PLASTIC_COMPOSE_TESTS=1)")
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode != 0:
        pytest.skip(f"no {IMAGE} image (built by the compose cluster's first test run)")
    conf = tmp_path_factory.mktemp("auth-master")
    (conf / "credentials.json").write_text(json.dumps({"credentials": [
        {"principal": "plastic", "secret": "s3cret"}, {"principal": "second", "secret": "two"}]}))
    conf.chmod(0o755)
    port = free_port()
    subprocess.run(["docker", "rm", "-f", NAME], capture_output=True)
    subprocess.run(["docker", "run", "-d", "--name", NAME, "--network", "host", "-v", f"{conf}:/cfg:ro", IMAGE,
                    "mesos-master", f"--port={port}", "--ip=127.0.0.1", "--work_dir=/tmp/mesos-auth",
                    "--authenticate_http_frameworks", "--http_framework_authenticators=basic",
                    "--credentials=/cfg/credentials.json"], check=True, capture_output=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                # up, and done recovering (before that every call is 503 "Master has not finished recovery")
                if httpx.post(url + "/api/v1/scheduler", content=b"{}", auth=("plastic", "s3cret"), timeout=2,
                              headers={"Content-Type": "application/json"}).status_code == 400:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the authenticating master did not answer within 60 s"
            time.sleep(0.5)
        yield SimpleNamespace(master_url=url, version=httpx.get(url + "/version", timeout=5).json()["version"])
    finally:
        subprocess.run(["docker", "rm", "-f", NAME], capture_output=True)


def test_it_is_a_real_mesos_1_11_master(auth_cluster):
    assert auth_cluster.version.startswith("1.11")


def test_plastic_run_with_a_wrong_secret_is_one_line(auth_cluster, tmp_path):
    cred = tmp_path / "cred"
    cred.write_text("plastic wrong-secret\n")
    cred.chmod(0o600)
    example = REPO / "cwl-examples" / "scatter-gather"
    res = plastic("run", example / "scatter-gather.cwl", example / "job.yml", "--master", auth_cluster.master_url,
                  "--mesos-credential", cred, "--run-dir", tmp_path / "run", cwd=tmp_path)
    assert_one_line_error(res, "refused the credential", "401")
    assert not (tmp_path / "run").exists()
