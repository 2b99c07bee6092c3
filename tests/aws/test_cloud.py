"""`plastic cloud up | status | down` against moto in server mode: a real HTTP endpoint started here,
reached through AWS_ENDPOINT_URL, so the code path is the one real AWS sees.  Never the real AWS."""

from __future__ import annotations

import json

import pytest

from plastic.aws import cloud
from plastic.aws.ec2_cloud import (
    TAG_CLUSTER,
    TAG_MANAGED,
    TAG_MARKET,
    TAG_RUN,
    Aws,
    NodeSettings,
    fleet_answer,
)
from plastic.catalogs import load_catalog
from plastic.core.model import Market
from tests.aws.helpers import SECRET, tagged_instances, three_cluster_plan
from tests.clirun import assert_one_line_error, plastic

pytest.importorskip("moto.server")


@pytest.mark.slow
def test_up_creates_the_planned_cluster_then_down_leaves_nothing(endpoint, image_id, tmp_path):
    import boto3

    plan = three_cluster_plan(tmp_path / "plan.json")
    res = plastic("cloud", "up", plan, "--run-id", "r1", "--image-id", image_id, "--master", "10.0.0.1:5050")
    assert res.returncode == 0, res.stderr
    assert "cluster core: planned 1 c5.large on-demand; asked 1, obtained 1 c5.large" in res.stdout
    assert "cluster burst-small: planned 3 m5.large spot; asked 3, obtained 3" in res.stdout
    instances = tagged_instances("r1")
    by_cluster: dict[str, list[dict]] = {}
    for i in instances:
        tags = {t["Key"]: t["Value"] for t in i["Tags"]}
        assert tags[TAG_RUN] == "r1" and tags[TAG_MANAGED] == "plastic"
        by_cluster.setdefault(tags[TAG_CLUSTER], []).append(i)
        spot = i.get("InstanceLifecycle") == "spot"
        assert tags[TAG_MARKET] == ("spot" if spot else "on-demand")
    assert {c: len(v) for c, v in by_cluster.items()} == {"core": 1, "burst-small": 3, "burst-large": 2}
    assert all(i.get("InstanceLifecycle") != "spot" for i in by_cluster["core"])
    assert all(i.get("InstanceLifecycle") == "spot" for c in ("burst-small", "burst-large") for i in by_cluster[c])
    ec2 = boto3.client("ec2")
    templates = ec2.describe_launch_templates(Filters=[{"Name": f"tag:{TAG_RUN}", "Values": ["r1"]}])["LaunchTemplates"]
    assert sorted(t["LaunchTemplateName"] for t in templates) == [
        "plastic-r1-burst-large", "plastic-r1-burst-small", "plastic-r1-core"]
    data = ec2.describe_launch_template_versions(LaunchTemplateName="plastic-r1-burst-small")[
        "LaunchTemplateVersions"][0]["LaunchTemplateData"]
    import base64

    user_data = base64.b64decode(data["UserData"]).decode()
    assert "--master=10.0.0.1:5050" in user_data and "cluster:burst-small" in user_data
    assert "preemptible:true" in user_data and "market:spot" in user_data and "instance_id:$INSTANCE_ID" in user_data
    (group,) = ec2.describe_security_groups(Filters=[{"Name": f"tag:{TAG_RUN}", "Values": ["r1"]}])["SecurityGroups"]
    assert data["SecurityGroupIds"] == [group["GroupId"]]
    for perm in group["IpPermissions"]:  # inside the group only
        assert not perm.get("IpRanges") and not perm.get("Ipv6Ranges"), perm
        assert [p["GroupId"] for p in perm["UserIdGroupPairs"]] == [group["GroupId"]]
    assert {(p["FromPort"], p["ToPort"]) for p in group["IpPermissions"]} == {(5050, 5051), (6379, 6379),
                                                                              (31000, 32000)}
    queues = boto3.client("sqs").list_queues(QueueNamePrefix="plastic-r1-spot").get("QueueUrls", [])
    assert len(queues) == 1 and "plastic sqs-watch --queue-url" in res.stdout
    assert SECRET not in res.stdout + res.stderr

    status = plastic("cloud", "status", "r1", "--format", "json")
    assert status.returncode == 0, status.stderr
    rows = json.loads(status.stdout)
    assert len(rows) == 6 and {r["state"] for r in rows} == {"running"}
    assert {(r["cluster"], r["market"]) for r in rows} == {("core", "on-demand"), ("burst-small", "spot"),
                                                           ("burst-large", "spot")}
    assert all(r["usd_per_hour"] > 0 for r in rows)
    table = plastic("cloud", "status", "r1")
    assert "6 live instance(s)" in table.stdout

    down = plastic("cloud", "down", "r1", "--wait-seconds", "30")
    assert down.returncode == 0, down.stderr
    assert down.stdout.count("removed instance ") == 6 and "removed security group" in down.stdout
    assert "removed EventBridge rule plastic-r1-spot" in down.stdout and "removed SQS queue" in down.stdout
    assert cloud.leftovers(Aws.connect(None), "r1") == {"instances": 0, "launch_templates": 0, "security_groups": 0,
                                                         "rules": 0, "queues": 0, "buckets": 0}
    again = plastic("cloud", "down", "r1")
    assert again.returncode == 0 and "nothing is tagged plastic:run=r1" in again.stdout


@pytest.mark.slow
def test_a_repeated_up_creates_nothing_twice(endpoint, image_id, tmp_path):
    plan = three_cluster_plan(tmp_path / "plan.json")
    first = plastic("cloud", "up", plan, "--run-id", "r2", "--image-id", image_id)
    assert first.returncode == 0, first.stderr
    second = plastic("cloud", "up", plan, "--run-id", "r2", "--image-id", image_id)
    assert second.returncode == 0, second.stderr
    assert "created" not in second.stdout  # no group, template, queue, rule or instance
    assert second.stdout.count("nothing to create") == 3
    assert len(tagged_instances("r2")) == 6
    assert plastic("cloud", "down", "r2").returncode == 0


def test_dry_run_prints_the_calls_and_makes_none(endpoint, image_id, tmp_path):
    plan = three_cluster_plan(tmp_path / "plan.json")
    res = plastic("cloud", "up", plan, "--run-id", "r3", "--image-id", image_id, "--dry-run")
    assert res.returncode == 0, res.stderr
    ops = [line.split()[0] for line in res.stdout.splitlines()]
    assert ops.count("ec2:CreateFleet") == 3 and ops.count("ec2:CreateLaunchTemplate") == 3
    assert "ec2:CreateSecurityGroup" in ops and "events:PutRule" in ops and "sqs:CreateQueue" in ops
    assert tagged_instances("r3") == []
    assert cloud.leftovers(Aws.connect(None), "r3")["security_groups"] == 0


@pytest.mark.parametrize(("change", "args", "words"), [
    ("schema", (), ("plan.json", "schema")),
    ("type", (), ("plan.json", "clusters[0].instance_type", "c5.mega")),
    (None, ("--region", "mars-north-1"), ("mars-north-1", "--region")),
    (None, ("--subnet", "subnet-nope"), ("subnet-nope", "--subnet")),
    (None, ("--run-id", "bad/id"), ("bad/id", "--run-id")),
])
@pytest.mark.slow
def test_bad_input_is_one_line_and_creates_nothing(endpoint, image_id, tmp_path, change, args, words):
    plan = three_cluster_plan(tmp_path / "plan.json", schema="plastic.cluster/v9" if change == "schema" else
                              "plastic.plan/v1", itype="c5.mega" if change == "type" else "c5.large")
    argv = ["cloud", "up", plan, "--image-id", image_id]
    argv += [] if "--run-id" in args else ["--run-id", "r4"]
    assert_one_line_error(plastic(*argv, *args), *words)
    assert tagged_instances("r4") == [] and cloud.leftovers(Aws.connect(None), "r4")["security_groups"] == 0


@pytest.mark.slow
def test_no_credentials_is_one_line(endpoint, image_id, tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    plan = three_cluster_plan(tmp_path / "plan.json")
    assert_one_line_error(plastic("cloud", "up", plan, "--run-id", "r5", "--image-id", image_id), "credentials")


def test_a_refused_spot_type_is_data_naming_the_type_and_why():
    """An instant fleet's reply with an error for the planned type (the shape AWS documents) becomes a
    capacity error the controller falls back on, with what was obtained beside it."""
    reply = {"FleetId": "fleet-1",
             "Instances": [{"InstanceIds": ["i-1"], "InstanceType": "m5a.large", "Lifecycle": "spot"}],
             "Errors": [{"LaunchTemplateAndOverrides": {"Overrides": {"InstanceType": "m5.large"}},
                         "Lifecycle": "spot", "ErrorCode": "InsufficientInstanceCapacity",
                         "ErrorMessage": "We currently do not have sufficient m5.large capacity."}]}
    answer = fleet_answer(reply, "m5.large", Market.SPOT, 3)
    assert answer.instance_ids == ("i-1",) and answer.obtained == {"m5a.large": 1}
    (refused,) = answer.refused
    assert refused.instance_type == "m5.large" and refused.count == 2
    assert refused.reason.startswith("InsufficientInstanceCapacity")


def test_up_in_process_reports_calls(endpoint, image_id, tmp_path):
    catalog = load_catalog(None)
    orders = cloud.read_orders(str(three_cluster_plan(tmp_path / "plan.json")), catalog)
    aws = Aws.connect(None)
    res = cloud.up(aws, "r6", orders, catalog, NodeSettings(image_id=image_id, master="m:5050", redis="redis://r"))
    assert res.asked == {"core": 1, "burst-small": 3, "burst-large": 2}
    assert sum(sum(v.values()) for v in res.obtained.values()) == 6
    assert res.calls.count("ec2:CreateFleet") == 3
    cloud.down(aws, "r6", wait_s=10)


@pytest.mark.slow
def test_without_a_default_vpc_a_subnet_is_required(endpoint, image_id, tmp_path):
    import boto3

    ec2 = boto3.client("ec2")
    (vpc,) = ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]
    for subnet in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])["Subnets"]:
        ec2.delete_subnet(SubnetId=subnet["SubnetId"])
    for igw in ec2.describe_internet_gateways(
            Filters=[{"Name": "attachment.vpc-id", "Values": [vpc["VpcId"]]}])["InternetGateways"]:
        ec2.detach_internet_gateway(InternetGatewayId=igw["InternetGatewayId"], VpcId=vpc["VpcId"])
    ec2.delete_vpc(VpcId=vpc["VpcId"])
    plan = three_cluster_plan(tmp_path / "plan.json")
    assert_one_line_error(plastic("cloud", "up", plan, "--run-id", "r7", "--image-id", image_id),
                          "no default VPC", "--subnet")
    assert tagged_instances("r7") == [] and cloud.leftovers(Aws.connect(None), "r7")["security_groups"] == 0
    # with a subnet of another VPC it goes ahead, in that VPC
    other = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=other, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
    res = plastic("cloud", "up", plan, "--run-id", "r7", "--image-id", image_id, "--subnet", subnet)
    assert res.returncode == 0, res.stderr
    assert {i["SubnetId"] for i in tagged_instances("r7")} == {subnet}
    (group,) = ec2.describe_security_groups(Filters=[{"Name": "tag:plastic:run", "Values": ["r7"]}])["SecurityGroups"]
    assert group["VpcId"] == other
    assert plastic("cloud", "down", "r7").returncode == 0


def test_terminate_skips_ids_ec2_does_not_know(endpoint, image_id):
    import boto3

    from plastic.aws.ec2_cloud import terminate

    (inst,) = boto3.client("ec2").run_instances(ImageId=image_id, MinCount=1, MaxCount=1)["Instances"]
    aws = Aws.connect(None)
    assert terminate(aws, [inst["InstanceId"], "i-0123456789abcdef0"]) == [inst["InstanceId"]]
    assert terminate(aws, ["i-0123456789abcdef0"]) == [] and terminate(aws, []) == []
