"""The local master's framework authentication (`plastic local up --credentials FILE`), held against
the answers of a real Mesos 1.11.1 master started with --authenticate_http_frameworks (recorded in
data/auth-answers-mesos-1.11.1.txt), and plastic's framework subscribing through it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from plastic.local.handle import LocalCluster
from tests.local.auth_scenarios import (  # collected here too: they run against any authenticating master
    CASES,
    recorded,
    test_answers_as_a_real_master,  # noqa: F401 (collected, or a fixture, here)
    test_framework_with_the_credential_subscribes_as_its_principal,  # noqa: F401 (collected, or a fixture, here)
    test_framework_without_a_good_credential_is_refused_at_once,  # noqa: F401 (collected, or a fixture, here)
)

SPEC = {"clusters": [{"name": "core", "count": 1, "cpus": 2, "ram_mib": 2048, "preemptible": False}]}


@pytest.fixture(scope="module")
def auth_cluster(tmp_path_factory) -> Iterator[LocalCluster]:
    creds = tmp_path_factory.mktemp("creds") / "credentials.json"
    creds.write_text(json.dumps({"credentials": [{"principal": "plastic", "secret": "s3cret"},
                                                 {"principal": "second", "secret": "two"}]}))
    creds.chmod(0o600)
    with LocalCluster(SPEC, credentials_file=creds) as c:
        yield c


def test_the_recorded_answers_cover_every_case():
    assert set(recorded()) == set(CASES)


def test_a_cluster_without_credentials_takes_any_framework(tmp_path):
    with LocalCluster(SPEC) as c:
        got = httpx.post(c.master_url + "/api/v1/scheduler", content=b"{}", auth=("any", "thing"),
                         headers={"Content-Type": "application/json"}, timeout=10)
        assert got.status_code == 400
