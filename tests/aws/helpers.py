"""What the tests of tests/aws share besides their fixtures (tests/aws/conftest.py): the region and the
fake secret, EventBridge events as SQS holds them, a queue's depth, a three-cluster plan, a run's
instances."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from plastic.aws.ec2_cloud import TAG_RUN

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
