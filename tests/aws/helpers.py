"""What the tests of tests/aws share besides their fixtures (tests/aws/conftest.py): the region and the
fake secret, EventBridge events as SQS holds them, a queue's depth, a three-cluster plan, a run's
instances, whether deploy/aws/iam-policy.json allows a call, and a bridge from moto's instances to local
agents."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

from plastic.aws.ec2_cloud import TAG_CLUSTER, TAG_RUN
from plastic.catalogs import load_catalog

POLICY = Path(__file__).resolve().parents[2] / "deploy" / "aws" / "iam-policy.json"
CALL_LOG = Path(__file__).resolve().parent / "call_log"  # on PYTHONPATH: every process's AWS calls recorded

REGION = "us-east-1"
SECRET = "moto-secret-never-shown"  # the fake secret key of moto server tests: it must appear in no output


def eb_event(detail_type: str, detail: dict, *, time: str = "2026-01-01T12:00:00Z",
             event_id: str | None = None) -> str:
    """An EventBridge event as it lands in SQS (the body of the message)."""
    instance = detail.get("instance-id", "i-0")
    return json.dumps({
        "version": "0", "id": event_id or str(uuid.uuid4()), "detail-type": detail_type, "source": "aws.ec2",
        "account": "123456789012", "time": time, "region": REGION,
        "resources": [f"arn:aws:ec2:{REGION}:123456789012:instance/{instance}"], "detail": detail})


def queue_depth(sqs, url: str) -> int:
    """Messages still on the queue, visible or in flight."""
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])


def three_cluster_plan(path: Path, *, schema: str = "plastic.plan/v1", itype: str = "c5.large") -> Path:
    """A plan (JSON, at ``path``) of one on-demand core node and two spot clusters (3 m5.large, 2 c5.2xlarge)."""
    path.write_text(json.dumps({"schema": schema, "clusters": [
        {"name": "core", "instance_type": itype, "market": "on-demand", "count": 1, "usd_per_hour": 0.085},
        {"name": "burst-small", "instance_type": "m5.large", "market": "spot", "count": 3, "usd_per_hour": 0.1},
        {"name": "burst-large", "instance_type": "c5.2xlarge", "market": "spot", "count": 2, "usd_per_hour": 0.3},
    ]}))
    return path


def tagged_instances(run_id: str) -> list[dict]:
    """The instances tagged plastic:run=RUN_ID that are not terminated (the endpoint in the environment)."""
    import boto3

    pages = boto3.client("ec2").get_paginator("describe_instances").paginate(
        Filters=[{"Name": f"tag:{TAG_RUN}", "Values": [run_id]}])
    return [i for p in pages for r in p["Reservations"] for i in r["Instances"] if i["State"]["Name"] != "terminated"]


# An API operation whose IAM action has another name (the others are their own action); None: no
# permission needed.  A call S3 makes that is not here is taken at its own name, which the policy
# then has to name: a new kind of call is mapped here on purpose.
IAM_ACTIONS: dict[str, tuple[str, ...] | None] = {
    "sts:GetCallerIdentity": None,
    "s3:HeadBucket": ("s3:ListBucket",), "s3:ListObjects": ("s3:ListBucket",), "s3:ListObjectsV2": ("s3:ListBucket",),
    "s3:ListObjectVersions": ("s3:ListBucketVersions",), "s3:ListBuckets": ("s3:ListAllMyBuckets",),
    "s3:ListMultipartUploads": ("s3:ListBucketMultipartUploads",),
    "s3:DeletePublicAccessBlock": ("s3:PutBucketPublicAccessBlock",),
    "s3:PutPublicAccessBlock": ("s3:PutBucketPublicAccessBlock",),
    "s3:GetPublicAccessBlock": ("s3:GetBucketPublicAccessBlock",),
    "s3:DeleteBucketOwnershipControls": ("s3:PutBucketOwnershipControls",),
    "s3:PutBucketEncryption": ("s3:PutEncryptionConfiguration",),
    "s3:GetBucketEncryption": ("s3:GetEncryptionConfiguration",),
    "s3:HeadObject": ("s3:GetObject",), "s3:CopyObject": ("s3:GetObject", "s3:PutObject"),
    "s3:CreateMultipartUpload": ("s3:PutObject",), "s3:UploadPart": ("s3:PutObject",),
    "s3:CompleteMultipartUpload": ("s3:PutObject",), "s3:UploadPartCopy": ("s3:GetObject", "s3:PutObject"),
    "s3:DeleteObjects": ("s3:DeleteObject", "s3:DeleteObjectVersion"),
}


def allowed(call: str, policy: dict) -> bool:
    """The policy allows the IAM action(s) of ``call`` (``service:Operation``), on some resource."""
    actions = IAM_ACTIONS.get(call, (call,))
    if actions is None:
        return True
    return all(_allows(action, policy) for action in actions)


def _allows(action: str, policy: dict) -> bool:
    import fnmatch

    for st in policy["Statement"]:
        listed = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        if st["Effect"] == "Allow" and any(fnmatch.fnmatchcase(action, a) for a in listed):
            return True
    return False


def recorded_calls(path: Path) -> list[str]:
    """The calls tests/aws/call_log recorded into ``path``, as ``service:Operation``, each once, sorted."""
    if not path.exists():
        return []
    return sorted({"{}:{}".format(*line.split()) for line in path.read_text().splitlines() if line.strip()})


def take_toils_encryption_rule(monkeypatch) -> None:
    """moto 5.2 answers MalformedXML to a PutBucketEncryption whose rule has BlockedEncryptionTypes and no
    ApplyServerSideEncryptionByDefault, which S3 accepts: Toil's AWS job store sends one when it makes
    its bucket (to unblock SSE-C).  Here moto takes it as S3 does, the default SSE-S3 (which S3 applies
    to every bucket) written out.  The server runs in this process, so the patch reaches it."""
    import xmltodict
    from moto.s3.responses import S3Response

    original = S3Response._encryption_config_from_body

    def lenient(self):
        config = xmltodict.parse(self.body).get("ServerSideEncryptionConfiguration") or {}
        rule = config.get("Rule")
        default = "ApplyServerSideEncryptionByDefault"
        if isinstance(rule, dict) and "BlockedEncryptionTypes" in rule and default not in rule:
            return {**config, "Rule": {**rule, "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}}
        return original(self)

    monkeypatch.setattr(S3Response, "_encryption_config_from_body", lenient)


class Bridge(threading.Thread):
    """moto instances of the run -> local agents with their instance ids, until stopped."""

    def __init__(self, cluster, run_id: str):
        super().__init__(daemon=True)
        import boto3

        self.ec2 = boto3.client("ec2")
        self.cluster = cluster
        self.run_id = run_id
        self.catalog = load_catalog(None)
        self.agents: dict[str, str] = {}  # instance -> agent
        self.gone: set[str] = set()
        self.stopped = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            try:
                self.step()
            except Exception as error:  # noqa: BLE001 - reported by the test
                self.errors.append(repr(error))

    def step(self) -> None:
        pages = self.ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag:plastic:run", "Values": [self.run_id]}])
        for inst in (i for p in pages for r in p["Reservations"] for i in r["Instances"]):
            iid, state = inst["InstanceId"], inst["State"]["Name"]
            tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
            if tags.get(TAG_CLUSTER) == "control-plane":
                continue  # not an agent: the test stands in for it
            if state in ("pending", "running") and iid not in self.agents:
                itype = self.catalog.by_name(inst["InstanceType"])
                spot = inst.get("InstanceLifecycle") == "spot"
                (agent,) = self.cluster.add_agents(cluster=tags[TAG_CLUSTER], cpus=itype.vcpus, ram_mib=itype.ram_mib,
                                                   preemptible=spot, instance_type=itype.name, boot_s=0,
                                                   instance_ids=[iid])
                self.agents[iid] = agent["agent_id"]
            elif state in ("shutting-down", "terminated") and iid in self.agents and iid not in self.gone:
                self.gone.add(iid)
                self.cluster.terminate_agent(self.agents[iid])
