"""A run's S3 job store (plastic.aws.job_store, plastic.run.ec2): its name, the bucket made private and
encrypted after Toil's own set-up, what a resume finds there, what the end of a run and `cloud down` do
with it.  Against moto (in process); the buckets are made by Toil's own function."""

from __future__ import annotations

import json

import pytest

from plastic.aws import cloud, job_store
from plastic.aws.ec2_cloud import Aws
from plastic.core.errors import InputError
from plastic.core.naming import is_job_store_name
from plastic.run import job_store as run_job_store
from tests.aws.helpers import POLICY, REGION, allowed, take_toils_encryption_rule


@pytest.fixture
def toil_rule(aws, monkeypatch):
    take_toils_encryption_rule(monkeypatch)


def toil_made(store: job_store.S3JobStore, run_id: str, monkeypatch, *, root: bool = True) -> None:
    """The bucket as Toil's leader makes it for `plastic run` (tags from TOIL_AWS_TAGS, public objects and
    SSE-C allowed), with the root job's shared file when Toil got that far."""
    import boto3
    from toil.lib.aws.s3 import create_s3_bucket

    monkeypatch.setenv(job_store.TOIL_TAGS_ENV, job_store.toil_tags(run_id))
    create_s3_bucket(boto3.resource("s3", region_name=REGION), store.bucket, REGION, public=True, encryptable=True)
    if root:
        boto3.client("s3").put_object(Bucket=store.bucket, Key=job_store.ROOT_JOB_KEY, Body=b"kind-of-a-job-id")


def test_the_run_gets_one_valid_bucket_name_per_account_and_region(aws):
    a = run_job_store.job_store_setting("s3", None, "Lab_Run.7")
    assert a == run_job_store.job_store_setting("s3", None, "Lab_Run.7")  # found again by `cloud down`
    region, name = a.removeprefix("aws:").split(":")
    assert region == REGION and is_job_store_name(name) and name.startswith("plastic-lab-run-7-")
    assert run_job_store.job_store_setting("s3", None, "other") != a
    assert run_job_store.job_store_setting("", None, "x") == "file"  # a local cluster: the run directory
    assert run_job_store.job_store_setting("aws:eu-west-1:my-own-store", None, "x") == "aws:eu-west-1:my-own-store"


@pytest.mark.parametrize(("given", "words"), [("bogus", "file, s3 or aws:REGION:NAME"),
                                              ("aws:us-east-1:Has_Capitals", "lower-case"),
                                              ("aws:us-east-1:a--b", "'--'"),
                                              ("aws:us-east-1", "aws:REGION:NAME")])
def test_a_bad_job_store_is_one_line_naming_it(aws, given, words):
    with pytest.raises(InputError) as err:
        run_job_store.job_store_setting(given, None, "r1")
    assert words in str(err.value) and err.value.field == "--job-store" and "\n" not in str(err.value)


def test_harden_takes_back_what_toil_opens(toil_rule, monkeypatch):
    import boto3

    aws = Aws.connect(None)
    store = job_store.for_run(aws, "r1")
    toil_made(store, "r1", monkeypatch)
    s3 = boto3.client("s3")
    with pytest.raises(Exception, match="NoSuchPublicAccessBlockConfiguration"):
        s3.get_public_access_block(Bucket=store.bucket)  # Toil removed it
    job_store.harden(aws, store)
    seen = job_store.describe_bucket(aws, store)
    assert seen["private"] and seen["encryption"] == ["AES256"]
    assert seen["tags"] == json.loads(job_store.toil_tags("r1"))
    (rule,) = s3.get_bucket_encryption(Bucket=store.bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rule.get("BucketKeyEnabled") is True  # plastic's rule, not Toil's
    # the batch system's entry point: from the locator alone
    s3.delete_public_access_block(Bucket=store.bucket)
    job_store.secure(store.locator)
    assert job_store.describe_bucket(aws, store)["private"]


def test_what_a_resume_finds_and_does(toil_rule, monkeypatch):
    aws = Aws.connect(None)
    store = job_store.for_run(aws, "r2")
    assert job_store.state(aws, store) == job_store.JobStoreState(False, False)
    start = run_job_store.job_store_start(store.locator)
    assert not start.restart and not start.wipe  # nothing there: Toil starts anew
    toil_made(store, "r2", monkeypatch, root=False)  # killed before Toil saved the workflow
    assert job_store.state(aws, store) == job_store.JobStoreState(True, False)
    start = run_job_store.job_store_start(store.locator)
    assert start.wipe and not job_store.state(aws, store).exists  # removed: Toil makes it again
    toil_made(store, "r2", monkeypatch)
    assert job_store.state(aws, store) == job_store.JobStoreState(True, True)
    assert run_job_store.job_store_start(store.locator).restart and job_store.state(aws, store).exists


def test_the_end_of_a_run_keeps_a_failed_runs_store_and_cloud_down_removes_it(toil_rule, monkeypatch):
    import boto3

    aws = Aws.connect(None)
    store = job_store.for_run(aws, "r3")
    toil_made(store, "r3", monkeypatch)
    s3 = boto3.client("s3")
    for i in range(1203):  # more than one delete call's worth
        s3.put_object(Bucket=store.bucket, Key=f"files/{i}", Body=b"x")
    s3.create_multipart_upload(Bucket=store.bucket, Key="files/killed-mid-upload")  # a killed worker's
    notes: list[str] = []
    run_job_store.end_job_store(store.locator, "r3", False, notes.append)
    assert job_store.state(aws, store).exists
    assert len(notes) == 1 and store.bucket in notes[0] and "plastic cloud down r3" in notes[0]
    # a bucket named as the run's but tagged with another run, and another run's: left alone
    other = job_store.S3JobStore(REGION, store.name.rsplit("-", 1)[0] + "-00000000")
    toil_made(other, "someone-else", monkeypatch)
    toil_made(job_store.for_run(aws, "r4"), "r4", monkeypatch)
    assert cloud.leftovers(aws, "r3")["buckets"] == 1
    calls = len(aws.calls)
    removed = cloud.down(aws, "r3", wait_s=5)
    assert "s3:AbortMultipartUpload" in aws.operations()[calls:]
    assert removed == [f"S3 bucket {store.bucket}"]
    assert cloud.leftovers(aws, "r3")["buckets"] == 0
    names = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    assert store.bucket not in names and other.bucket in names and len(names) == 2
    assert cloud.down(aws, "r3", wait_s=5) == []  # idempotent
    policy = json.loads(POLICY.read_text())
    assert not [c for c in aws.operations() if not allowed(c, policy)]


def test_the_end_of_a_successful_run_removes_a_bucket_toil_left(toil_rule, monkeypatch):
    aws = Aws.connect(None)
    store = job_store.for_run(aws, "r5")
    notes: list[str] = []
    run_job_store.end_job_store(store.locator, "r5", True, notes.append)  # Toil removed it: nothing to say
    assert notes == []
    toil_made(store, "r5", monkeypatch)
    run_job_store.end_job_store(store.locator, "r5", True, notes.append)
    assert not job_store.state(aws, store).exists and "removed" in notes[0]


def test_a_dry_run_names_the_store_without_asking_aws(aws_env):
    dry = Aws.connect(REGION, dry_run=True)
    store = job_store.for_run(dry, "r6")
    assert is_job_store_name(store.name) and dry.operations() == []
