"""Framework authentication scenarios that need only ``auth_cluster.master_url`` of a master started with
HTTP framework authentication and the credentials plastic/s3cret and second/two: collected by
tests/local/test_master_auth.py against plastic's local master and by tests/compose/test_a_real_master_auth.py
against a real Mesos 1.11 one (where they disagree, the local master is wrong).  The real master's answers
are recorded in data/auth-answers-mesos-1.11.1.txt."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from plastic.framework.adapter import Framework
from plastic.local.handle import LocalCluster
from plastic.mesos.credential import Credential
from plastic.mesos.driver_errors import MesosFrameworkError

DATA = Path(__file__).parent / "data" / "auth-answers-mesos-1.11.1.txt"
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


def recorded() -> dict[str, tuple[int, dict[str, str], str]]:
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


@pytest.mark.parametrize("case", sorted(CASES))
def test_answers_as_a_real_master(auth_cluster, case):
    status, headers, body = recorded()[case]
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


def auth_framework(cluster: LocalCluster, credential: Credential | None) -> Framework:
    return Framework(cluster.master_url, name="auth-test", credential=credential)


def test_framework_with_the_credential_subscribes_as_its_principal(auth_cluster):
    fw = auth_framework(auth_cluster, Credential("second", "two"))
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
    fw = auth_framework(auth_cluster, credential)
    with pytest.raises(MesosFrameworkError, match="401"):
        fw.start(timeout=20)
