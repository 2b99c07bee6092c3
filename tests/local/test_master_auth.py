"""The local master's framework authentication (`plastic local up --credentials FILE`), held against
the answers of a real Mesos 1.11.1 master started with --authenticate_http_frameworks (recorded in
data/auth-answers-mesos-1.11.1.txt), and plastic's framework subscribing through it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from plastic.framework.adapter import Framework
from plastic.local.testing import LocalCluster
from plastic.mesos.credential import Credential
from plastic.mesos.errors import MesosFrameworkError

DATA = Path(__file__).parent / "data" / "auth-answers-mesos-1.11.1.txt"
SPEC = {"clusters": [{"name": "core", "count": 1, "cpus": 2, "ram_mib": 2048, "preemptible": False}]}
SUBSCRIBE = {"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": "root", "name": "t"}}}
CASES = {  # the requests the recorded answers were given to
    "no_auth": ("POST", SUBSCRIBE, None),
    "wrong_secret": ("POST", SUBSCRIBE, ("plastic", "wrong")),
    "unknown_principal": ("POST", SUBSCRIBE, ("nobody", "s3cret")),
    "get_with_auth": ("GET", None, ("plastic", "s3cret")),
    "principal_mismatch": ("POST", {"type": "SUBSCRIBE", "subscribe": {"framework_info": {
        "user": "root", "name": "t", "principal": "other"}}}, ("plastic", "s3cret")),
    "empty_call_with_auth": ("POST", {}, ("plastic", "s3cret")),
}


def _recorded() -> dict[str, tuple[int, dict[str, str], str]]:
    """name -> (status, headers that matter, body) from the real master's answers."""
    answers = {}
    for block in re.split(r"^=== ", DATA.read_text(), flags=re.M)[1:]:
        name, _, rest = block.partition("\n")
        head, _, body = rest.partition("\n\n")
        lines = head.splitlines()
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        answers[name] = (status, headers, body.strip())
    return answers


@pytest.fixture(scope="module")
def auth_cluster(tmp_path_factory) -> Iterator[LocalCluster]:
    creds = tmp_path_factory.mktemp("creds") / "credentials.json"
    creds.write_text(json.dumps({"credentials": [{"principal": "plastic", "secret": "s3cret"},
                                                 {"principal": "second", "secret": "two"}]}))
    creds.chmod(0o600)
    with LocalCluster(SPEC, credentials_file=creds) as c:
        yield c


def test_the_recorded_answers_cover_every_case():
    assert set(_recorded()) == set(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_answers_as_a_real_master(auth_cluster, case):
    status, headers, body = _recorded()[case]
    method, call, auth = CASES[case]
    kwargs = {"auth": auth} if auth else {}
    if call is not None:
        kwargs["content"] = json.dumps(call).encode()
        kwargs["headers"] = {"Content-Type": "application/json", "Accept": "application/json"}
    got = httpx.request(method, auth_cluster.master_url + "/api/v1/scheduler", timeout=10, **kwargs)
    assert got.status_code == status, got.text
    assert got.text.strip() == body
    for name in ("www-authenticate", "allow"):
        assert got.headers.get(name) == headers.get(name), name
    assert got.headers["content-type"].startswith("text/plain")


def _framework(cluster: LocalCluster, credential: Credential | None) -> Framework:
    return Framework(cluster.master_url, name="auth-test", credential=credential)


def test_framework_with_the_credential_subscribes_as_its_principal(auth_cluster):
    fw = _framework(auth_cluster, Credential("second", "two"))
    try:
        fw.start(timeout=20)
        assert fw.framework_id
        frameworks = fw.driver.operator.get_frameworks()["get_frameworks"]["frameworks"]
        mine = [f for f in frameworks if f["framework_info"]["id"]["value"] == fw.framework_id]
        assert mine and mine[0]["framework_info"]["principal"] == "second"
    finally:
        fw.stop()


@pytest.mark.parametrize("credential", [None, Credential("plastic", "not-it"), Credential("who", "s3cret")],
                         ids=["none", "wrong_secret", "unknown_principal"])
def test_framework_without_a_good_credential_is_refused_at_once(auth_cluster, credential):
    fw = _framework(auth_cluster, credential)
    with pytest.raises(MesosFrameworkError, match="401"):
        fw.start(timeout=20)


def test_a_cluster_without_credentials_takes_any_framework(tmp_path):
    with LocalCluster(SPEC) as c:
        got = httpx.post(c.master_url + "/api/v1/scheduler", content=b"{}", auth=("any", "thing"),
                         headers={"Content-Type": "application/json"}, timeout=10)
        assert got.status_code == 400
