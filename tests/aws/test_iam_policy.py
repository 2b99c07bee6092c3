"""deploy/aws/iam-policy.json allows every AWS call plastic makes, and no more than it needs.

Every call is recorded as it leaves botocore (the ``before-call`` event) while plastic does all it does
on AWS against moto in server mode: `cloud up` of a 3-cluster plan, `status`, the elastic run's ec2
provider creating, listing and terminating nodes, `plastic sqs-watch` reading spot events, `cloud down`.
The calls of a run with its job store in S3 (Toil's leader and workers among them) are checked against
the same policy where that run is (tests/aws/test_s3_job_store_run.py).
"""

from __future__ import annotations

import json

import pytest

from plastic.aws import cloud
from plastic.aws.ec2_cloud import Aws, NodeSettings
from plastic.catalogs import load_catalog
from plastic.core.model import Market
from plastic.providers.base import NodeRequest
from plastic.providers.ec2 import Ec2Provider
from tests.aws.helpers import POLICY, allowed, three_cluster_plan


def record_calls(client, service: str, calls: list[str]) -> None:
    client.meta.events.register("before-call", lambda model=None, **_: calls.append(f"{service}:{model.name}"))


@pytest.mark.slow
def test_every_call_plastic_makes_is_allowed(endpoint, image_id, tmp_path):
    from plastic.aws.session import clients
    from plastic.aws.sqs_notices import SqsNoticePoller, check_queue
    from plastic.store import Store, start_embedded

    catalog = load_catalog(None)
    aws = Aws.connect(None)
    orders = cloud.read_orders(str(three_cluster_plan(tmp_path / "plan.json")), catalog)
    settings = NodeSettings(image_id=image_id, master="10.0.0.1:5050", redis="redis://10.0.0.1:6379/0",
                            instance_profile="plastic-agents", key_name="lab")
    res = cloud.up(aws, "iam1", orders, catalog, settings)
    cloud.status(aws, "iam1", catalog)
    provider = Ec2Provider(aws, "iam1", settings, catalog)
    made = provider.create(NodeRequest("burst-new", "m5.large", Market.SPOT, 2, 2, 8192))
    provider.list_nodes()
    provider.terminate(made.node_ids)
    watcher_calls: list[str] = []
    sqs, ec2, _ = clients(None, read_timeout_s=30)
    record_calls(sqs, "sqs", watcher_calls)
    record_calls(ec2, "ec2", watcher_calls)
    server = start_embedded(tmp_path / "redis")
    try:
        check_queue(sqs, res.queue_url)
        SqsNoticePoller(Store(server.client()), res.queue_url, sqs=sqs, ec2=ec2, wait_seconds=0).run(max_rounds=1)
    finally:
        server.stop()
    cloud.down(aws, "iam1", wait_s=10)
    made_calls = sorted(set(aws.operations()) | set(watcher_calls))
    policy = json.loads(POLICY.read_text())
    missing = [c for c in made_calls if not allowed(c, policy)]
    assert not missing, f"deploy/aws/iam-policy.json does not allow {missing}"
    assert {"ec2:CreateFleet", "ec2:TerminateInstances", "sqs:ReceiveMessage", "events:PutRule"} <= set(made_calls)


def test_the_policy_is_least_privilege():
    policy = json.loads(POLICY.read_text())
    for st in policy["Statement"]:
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        assert not any(a == "*" or a.endswith(":*") for a in actions), st  # no service-wide grants
        destructive = [a for a in actions if a.split(":")[1].startswith(("Terminate", "Delete", "Authorize"))]
        if destructive and st["Resource"] == "*":  # only what plastic tagged as its own
            assert st["Condition"]["StringEquals"]["aws:ResourceTag/plastic:managed-by"] == "plastic", st
        if "iam:PassRole" in actions:
            assert st["Resource"] != "*", st
